"""In-memory records of what happened: the audit trail and idempotency keys."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, purge, require
from strongroom.domain.audit import AuditEvent
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driven.repositories import (
    AuditFilter,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
)


class MemoryAuditRepository(MemoryRepository):
    """The audit trail."""

    table = "audit"

    async def add(self, event: AuditEvent) -> None:
        require(event.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(event.id, event)

    async def list(
        self, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        def matches(event: AuditEvent) -> bool:
            return (
                event.workspace_id == workspace_id
                and (filters.action is None or event.action == filters.action)
                and (filters.actor_id is None or event.actor.id == filters.actor_id)
                and (filters.since is None or event.occurred_at >= filters.since)
            )

        return keyset_page(filter(matches, self._tx.read(self.table).values()), page)


class MemoryIdempotencyRepository(MemoryRepository):
    """Idempotency keys, unique per (scope, key)."""

    table = "idempotency"

    async def reserve(self, record: IdempotencyRecord, expired_before: datetime) -> None:
        key = (record.scope, record.key)
        held: IdempotencyRecord | None = self._tx.read(self.table).get(key)
        if held is not None and held.created_at >= expired_before:
            raise IdempotencyKeyTakenError(record.key)
        self._tx.write(self.table)[key] = record

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        found: IdempotencyRecord | None = self._tx.read(self.table).get((scope, key))
        return found

    async def complete(self, scope: str, key: str, body: str) -> None:
        held = await self.get(scope, key)
        if held is None:
            raise IntegrityViolationError("complete of an unreserved key")
        self._tx.write(self.table)[(scope, key)] = evolve(held, body=body)

    async def purge(self, expired_before: datetime) -> int:
        return purge(self._tx.write(self.table), lambda r: r.created_at < expired_before)
