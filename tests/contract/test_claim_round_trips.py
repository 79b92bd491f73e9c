"""What ``POST /v1/claims`` costs on PostgreSQL: the statements of one claim, made as the
HTTP handler makes it (one call into the core with the request's bearer)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from strongroom.adapters.runtime.blocking import blocking, blocking_call, unwrapped
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving.access import Bearer
from support.people import retention, workspace_admin


class RoundTrips:
    """The statements psycopg sends, grouped by round trip: the statements of one pipeline
    share one, any other statement takes one of its own."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.trips: list[list[str]] = []
        self._pipelined = False
        execute = psycopg.AsyncCursor.execute
        pipeline = psycopg.AsyncConnection.pipeline

        async def counted(
            cursor: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any
        ) -> Any:
            text = query.decode() if isinstance(query, bytes) else str(query)
            words = " ".join(text.split()[:3])
            if self._pipelined and self.trips:
                self.trips[-1].append(words)
            else:
                self.trips.append([words])
            return await execute(cursor, query, *args, **kwargs)

        @contextlib.asynccontextmanager
        async def grouped(connection: psycopg.AsyncConnection[Any]) -> AsyncIterator[Any]:
            async with pipeline(connection) as opened:
                self.trips.append([])
                self._pipelined = True
                try:
                    yield opened
                finally:
                    self._pipelined = False

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted)
        monkeypatch.setattr(psycopg.AsyncConnection, "pipeline", grouped)


def test_a_claim_is_one_credential_read_and_one_transaction(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's credential (one read), then one transaction: the run locked, claimed,
    its backup read, and the ``run.claim`` event the unit collected written with the
    ``COMMIT``. No second credential read, no workspace read (a worker is never refused
    for billing): seven statements in five round trips (six before the unit of work
    collected events)."""
    facade = blocking(bootstrap(uow=postgres_database.uow))
    ada, workspace_id = blocking_call(workspace_admin(unwrapped(facade), "ada@example.com"))
    issued = facade.workers.create(ada, "rack")
    rack = facade.access.authenticate(issued.token)
    backup = facade.backups.create(ada, workspace_id, "Nightly", BackupKind.LOCAL)
    assigned = BackupChanges(worker_id=rack.worker_id, retention=retention("P30D", "PT0S"))
    facade.backups.update(ada, backup.id, assigned)
    run = facade.runs.trigger(ada, backup.id)
    counter = RoundTrips(monkeypatch)
    claimed = facade.claims.claim(Bearer(issued.token, "req-1"), 0)
    assert claimed is not None
    assert (claimed.run.id, claimed.backup.id) == (run.id, backup.id)
    assert counter.trips == [
        ["SELECT id, workspace_id,"],
        ["BEGIN", "SELECT runs.id, runs.workspace_id,"],
        ["UPDATE runs SET"],
        ["SELECT id, workspace_id,"],
        # The commit's deadline (a write never commits past it) rides in the same trip.
        ["INSERT INTO audit_events", "INSERT INTO commit_deadlines", "COMMIT"],
    ]
