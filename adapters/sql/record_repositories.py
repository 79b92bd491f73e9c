"""SQL records of what happened: the audit trail and idempotency keys."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.statements import SqlRepository, page_params
from strongroom.domain.audit import AuditEvent
from strongroom.domain.pagination import Page, PageRequest, page_of
from strongroom.ports.driven.repositories import (
    AuditFilter,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
)


class SqlAuditRepository(SqlRepository):
    """The audit trail."""

    async def add(self, event: AuditEvent) -> None:
        """Record an event."""
        await self._db.execute(Q.AUDIT_INSERT, rows.audit_params(event, self._codec))

    async def list(
        self, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        """A workspace's events, newest first, filtered."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        fragments: list[Q] = []
        if filters.action is not None:
            fragments.append(Q.FILTER_AUDIT_ACTION)
            params["action"] = filters.action
        if filters.actor_id is not None:
            fragments.append(Q.FILTER_AUDIT_ACTOR)
            params["actor_id"] = self._codec.uuid(filters.actor_id)
        if filters.since is not None:
            fragments.append(Q.FILTER_AUDIT_SINCE)
            params["since"] = self._codec.timestamp(filters.since)
        if after:
            fragments.append(Q.FILTER_AUDIT_AFTER)
        found = await self._db.fetch_all(Q.AUDIT_LIST, params, filters=fragments)
        return page_of([rows.audit_from_row(row, self._codec) for row in found], page)


class SqlIdempotencyRepository(SqlRepository):
    """Idempotency keys, unique per (scope, key)."""

    async def reserve(self, record: IdempotencyRecord, expired_before: datetime) -> None:
        """Reserve a key; ``IdempotencyKeyTakenError`` if a live reservation holds it."""
        params = rows.idempotency_params(record, self._codec)
        params["expired_before"] = self._codec.timestamp(expired_before)
        if await self._db.fetch_one(Q.IDEMPOTENCY_RESERVE, params, writes=True) is None:
            raise IdempotencyKeyTakenError(record.key)

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        """A reserved key."""
        row = await self._db.fetch_one(Q.IDEMPOTENCY_GET, {"scope": scope, "idempotency_key": key})
        return None if row is None else rows.idempotency_from_row(row, self._codec)

    async def complete(self, scope: str, key: str, body: str) -> None:
        """Attach the request's result to a reserved key."""
        changed = await self._db.execute(
            Q.IDEMPOTENCY_COMPLETE,
            {"scope": scope, "idempotency_key": key, "body": body},
        )
        if changed != 1:
            raise IntegrityViolationError("complete of an unreserved key")

    async def purge(self, expired_before: datetime) -> int:
        """Delete the keys reserved before ``expired_before``; how many went."""
        return await self._db.execute(
            Q.IDEMPOTENCY_PURGE, {"expired_before": self._codec.timestamp(expired_before)}
        )
