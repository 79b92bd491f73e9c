"""One unit of work that changes a workspace: lock, billing gate, audit, commit.

Every configuration change runs the same steps: the workspace is read locked (so changes
and quota checks of one workspace are serialised), its billing state is asked whether it
allows the write, the change's audit event is collected by the unit of work, and the
whole commits once. ``WorkspaceChange`` holds those steps; ``changing`` commits when its
block ends without an error, with the events collected (``collect``), so a change made
through it never commits unaudited.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from uuid import UUID

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import Change
from strongroom.domain.billing import GatedOperation, ensure_allowed
from strongroom.domain.events import Recorded
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import Workspace
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import by_caller


class WorkspaceChange:
    """A change of one workspace by ``caller`` inside ``uow``."""

    def __init__(
        self, deps: Dependencies, uow: UnitOfWork, caller: Caller, workspace_id: UUID
    ) -> None:
        self.uow = uow
        self._deps = deps
        self._caller = caller
        self._workspace_id = workspace_id
        self._workspace: Workspace | None = None

    async def locked(self) -> Workspace:
        """The workspace, locked until the unit of work ends (404 if it is gone)."""
        if self._workspace is None:
            self._workspace = await lookups.workspace(self.uow, self._workspace_id, for_update=True)
        return self._workspace

    async def gate(
        self, operation: GatedOperation = GatedOperation.CONFIG_WRITE, *, lock: bool = True
    ) -> Workspace:
        """``locked`` (or, without ``lock``, read as it is: for writes that count nothing
        of the workspace), refusing (409 ``billing_restricted``) what its billing state
        refuses."""
        if lock:
            workspace = await self.locked()
        elif self._workspace is not None:
            workspace = self._workspace
        else:
            workspace = await lookups.workspace(self.uow, self._workspace_id)
        ensure_allowed(workspace.billing_state, operation)
        return workspace

    def collect(self, recorded: Recorded) -> None:
        """Hand the audit event of ``recorded`` (a change by the caller) to the unit of
        work, which writes it with its commit."""
        self.uow.collect(by_caller(self._deps, self._caller, self._workspace_id, recorded))

    async def record(
        self, action: str, target_id: UUID | str | None, changes: Mapping[str, Change] | None = None
    ) -> None:
        """``collect`` of a change given by its parts (the backup create's path)."""
        self.collect(Recorded(action, target_id, changes))


@asynccontextmanager
async def changing(
    deps: Dependencies, caller: Caller, workspace_id: UUID
) -> AsyncIterator[WorkspaceChange]:
    """A new unit of work changing ``workspace_id``: committed, with the events it
    collected, when the block ends without an error; rolled back otherwise."""
    async with deps.uow() as uow:
        yield WorkspaceChange(deps, uow, caller, workspace_id)
        await uow.commit()
