"""PostgreSQL for the HTTP integration tests: one migrated database per test session (and
xdist worker), dropped at the end. Every test works in workspaces of its own, so nothing
needs emptying between tests. With no PostgreSQL to be had these tests fail, never skip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from strongroom.adapters.sql.postgres import PostgresDatabase
from support import pg_fixtures
from support.postgres import PostgresServer, scratch_database

pg_server = pg_fixtures.pg_server  # the shared server fixture, found by its name here


@pytest.fixture(scope="session")
def integration_conninfo(pg_server: PostgresServer) -> Iterator[str]:
    """A migrated database of this test session."""
    with scratch_database(pg_server, prefix="strongroom_it") as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        yield conninfo
