"""A workspace with a session allowed to create backups, creates in it as the use case
makes them once admitted (``BackupRepository.add_counted`` bounded by the workspace's
limit), and a count of the batches they were committed in: the scene of the group-commit
tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import attrs
import pytest
from contract_records import T0, SqlAdapter, audit_event, backup, session, user, workspace

from strongroom.adapters.sql import postgres_transaction
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.postgres_group_commit import Statement
from strongroom.adapters.sql.rows import Row
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.pagination import PageRequest
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
from strongroom.ports.driven.repositories import AuditFilter

NOW = T0 + timedelta(hours=1)


@attrs.frozen
class Scene:
    database: SqliteDatabase | PostgresDatabase
    workspace_id: UUID
    token_hash: str
    limit: int = 0

    async def create(self, name: str | None = None) -> bool:
        """One create of a new backup, in a unit of work of its own."""
        candidate = backup(self.workspace_id, name, created_at=NOW)
        event = attrs.evolve(audit_event(self.workspace_id, NOW), target_id=str(candidate.id))
        async with self.database.uow() as uow:
            created = await uow.backups.add_counted(candidate, event, self.limit or None)
            await uow.commit()
        return created

    def stored(self) -> tuple[int, int, int]:
        """The usage counter, the backups listed and the create events recorded."""
        with _adapter(self.database).uow() as uow:
            counted = uow.backups.count(self.workspace_id)
            listed = len(uow.backups.list(self.workspace_id, PageRequest(200, None)).items)
            events = uow.audit.list(self.workspace_id, AuditFilter(), PageRequest(200, None))
        return counted, listed, sum(e.action == "backup.create" for e in events.items)


def _adapter(database: SqliteDatabase | PostgresDatabase) -> SqlAdapter:
    name = "sqlite" if isinstance(database, SqliteDatabase) else "postgres"
    return SqlAdapter(name, database.uow)


def new_scene(database: SqliteDatabase | PostgresDatabase, limit: int = 0) -> Scene:
    """A person, their workspace (backups limited to ``limit``; 0: unlimited), their
    membership as admin and a session scoped to it."""
    ada = user()
    target = workspace(ada, quota_overrides={QuotaResource.BACKUPS_PER_WORKSPACE: limit})
    mine = session(ada.id, target.id)
    _adapter(database).store(ada, target, mine, Membership(target.id, ada.id, "admin", T0))
    return Scene(database, target.id, mine.token_hash, limit)


def count_batches(
    database: SqliteDatabase | PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> list[int]:
    """The size of every batch ``database`` runs from now on (SQLite: 1 per batch handed
    to its threads, whatever its size)."""
    sizes: list[int] = []
    if isinstance(database, SqliteDatabase):
        submit = database.submit

        def submitted(work: Callable[[], Any]) -> Any:
            sizes.append(1)
            return submit(work)

        monkeypatch.setattr(database, "submit", submitted)
        return sizes
    run_batch = postgres_transaction.run_batch

    async def counted(database: PostgresDatabase, statements: Sequence[Statement]) -> Any:
        sizes.append(len(statements))
        rows: list[Row | None] = await run_batch(database, statements)
        return rows

    monkeypatch.setattr(postgres_transaction, "run_batch", counted)
    return sizes
