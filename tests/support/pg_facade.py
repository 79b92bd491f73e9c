"""A Strongroom on a scratch PostgreSQL database, for HTTP tests that need the real SQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.system import SecureIds, SystemClock
from support.postgres import postgres_server, scratch_database
from support.world import FAST_HASHER, make_facade


@contextmanager
def postgres_facade(prefix: str) -> Iterator[Any]:
    """A blocking facade over a migrated scratch database named from ``prefix`` (dropped
    at the end), with the built-in identity provider on the same database."""
    with (
        postgres_server() as server,
        scratch_database(server, prefix) as conninfo,
        PostgresDatabase.from_url(conninfo, min_size=1) as pg,
    ):
        pg.migrate()
        identity = BuiltinIdentityProvider(
            uow=pg.uow, clock=SystemClock(), ids=SecureIds(), hasher=FAST_HASHER
        )
        yield make_facade(uow=pg.uow, identity=identity)
