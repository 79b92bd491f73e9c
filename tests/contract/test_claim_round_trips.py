"""What ``POST /v1/claims`` costs on PostgreSQL: the statements of one claim, made as the
HTTP handler makes it (one call into the core with the request's bearer)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from strongroom.adapters.runtime.blocking import blocking, blocking_call, unwrapped
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving.access import Bearer
from support.people import retention, workspace_admin


class CountingCursor:
    """The first words of every statement psycopg sends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        original = psycopg.AsyncCursor.execute

        async def execute(
            cursor: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any
        ) -> Any:
            text = query.decode() if isinstance(query, bytes) else str(query)
            self.sent.append(" ".join(text.split()[:3]))
            return await original(cursor, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)


def test_a_claim_is_one_credential_read_and_one_transaction(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's credential (one read), then one transaction: the run locked, claimed,
    its backup read, and the ``run.claim`` event written. No second credential read, no
    workspace read (a worker is never refused for billing)."""
    facade = blocking(bootstrap(uow=postgres_database.uow))
    ada, workspace_id = blocking_call(workspace_admin(unwrapped(facade), "ada@example.com"))
    issued = facade.workers.create(ada, "rack")
    rack = facade.access.authenticate(issued.token)
    backup = facade.backups.create(ada, workspace_id, "Nightly", BackupKind.LOCAL)
    assigned = BackupChanges(worker_id=rack.worker_id, retention=retention("P30D", "PT0S"))
    facade.backups.update(ada, backup.id, assigned)
    run = facade.runs.trigger(ada, backup.id)
    counter = CountingCursor(monkeypatch)
    claimed = facade.claims.claim(Bearer(issued.token, "req-1"), 0)
    assert claimed is not None
    assert (claimed.run.id, claimed.backup.id) == (run.id, backup.id)
    assert counter.sent == [
        "SELECT id, workspace_id,",
        "BEGIN",
        "SELECT runs.id, runs.workspace_id,",
        "UPDATE runs SET",
        "SELECT id, workspace_id,",
        "INSERT INTO audit_events",
        "COMMIT",
    ]
