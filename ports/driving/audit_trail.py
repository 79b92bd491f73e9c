"""Reading a workspace's audit trail."""

from __future__ import annotations

from uuid import UUID

from strongroom.domain.audit import AuditEvent
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.dependencies import Dependencies

READ_AUDIT = Requirement((Permission.AUDIT_READ,))


class AuditTrail:
    """Reading a workspace's audit trail."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def events(
        self, caller: Caller | Grant, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        """The workspace's events, newest first, optionally filtered."""
        caller, _ = await self._access.resolve(caller, READ_AUDIT, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.audit.list(workspace_id, filters, page)
