"""The adapters the repository contract runs against: in-memory, SQLite and PostgreSQL.

SQLite databases are copies of one file migrated once per test session. PostgreSQL gets
one database per test session (and xdist worker), created and migrated here and dropped
at the end; every test starts from empty tables. With no PostgreSQL to be had the
PostgreSQL tests fail (see ``support.postgres``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from contract_records import Adapter, MemoryAdapter, SqlAdapter

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from support import pg_fixtures, stores
from support.postgres import PostgresServer, scratch_database, truncate_all

ADAPTERS = ["memory", "sqlite", "postgres"]

pg_server = pg_fixtures.pg_server  # the shared server fixture, found by its name here
fresh_adapters = stores.fresh_adapters  # memory, SQLite and PostgreSQL side by side


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database file to copy."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite3"
    with SqliteDatabase(path) as database:
        database.migrate()
    return path


@pytest.fixture
def sqlite_database(sqlite_template: Path, tmp_path: Path) -> Iterator[SqliteDatabase]:
    """A fresh, migrated SQLite database."""
    path = tmp_path / "strongroom.sqlite3"
    shutil.copyfile(sqlite_template, path)
    with SqliteDatabase(path) as database:
        yield database


@pytest.fixture(scope="session")
def pg_conninfo(pg_server: PostgresServer) -> Iterator[str]:
    """A migrated database of this test session."""
    with scratch_database(pg_server) as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        yield conninfo


@pytest.fixture(scope="session")
def pg_session_database(pg_conninfo: str) -> Iterator[PostgresDatabase]:
    """The session's database, its pool open."""
    with PostgresDatabase.from_url(pg_conninfo, min_size=1) as database:
        yield database


@pytest.fixture
def postgres_database(pg_session_database: PostgresDatabase) -> PostgresDatabase:
    """The session's database, emptied."""
    with pg_session_database.connection() as connection:
        truncate_all(connection)
    return pg_session_database


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """Each adapter in turn, empty."""
    if request.param == "memory":
        return MemoryAdapter()
    if request.param == "sqlite":
        sqlite: SqliteDatabase = request.getfixturevalue("sqlite_database")
        return SqlAdapter("sqlite", sqlite.uow)
    postgres: PostgresDatabase = request.getfixturevalue("postgres_database")
    return SqlAdapter("postgres", postgres.uow)
