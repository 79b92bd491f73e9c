"""New, empty memory, SQLite and PostgreSQL stores, for the contract suites that run one
scenario on all three side by side (the agreement and snapshot-collection machines).

Import ``fresh_adapters`` into ``tests/contract/conftest.py``: it leans on that folder's
``sqlite_template`` and ``pg_session_database`` fixtures and its ``contract_records``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contract_records import Adapter, MemoryAdapter, SqlAdapter

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from support.postgres import truncate_all


@pytest.fixture
def fresh_adapters(
    sqlite_template: Path,
    tmp_path_factory: pytest.TempPathFactory,
    pg_session_database: PostgresDatabase,
) -> Iterator[Callable[[], list[Adapter]]]:
    """A maker of new, empty memory, SQLite and PostgreSQL adapters (one set per example)."""
    opened: list[SqliteDatabase] = []

    def make() -> list[Adapter]:
        path = tmp_path_factory.mktemp("stores") / "db.sqlite3"
        shutil.copyfile(sqlite_template, path)
        sqlite = SqliteDatabase(path)
        opened.append(sqlite)
        with pg_session_database.connection() as connection:
            truncate_all(connection)
        return [
            MemoryAdapter(),
            SqlAdapter("sqlite", sqlite.uow),
            SqlAdapter("postgres", pg_session_database.uow),
        ]

    yield make
    for database in opened:
        database.close()
