"""Run use cases: start a manual run, trigger a local or cloud backup, read, list and
cancel runs."""

from __future__ import annotations

from uuid import UUID

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import diff
from strongroom.domain.billing import GatedOperation
from strongroom.domain.events import Recorded, changed, created
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run, RunState, RunTrigger, ensure_manual, ensure_triggerable
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import WorkspaceChange, changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent

START_RUN = Requirement((Permission.ARTIFACTS_UPLOAD,), "run.create")
READ_RUN = Requirement((Permission.BACKUPS_READ, Permission.RUNS_READ))
TRIGGER_BACKUP = Requirement(
    (Permission.BACKUPS_WRITE, Permission.BACKUPS_TRIGGER), "backup.trigger"
)
CANCEL_RUN = Requirement((Permission.BACKUPS_TRIGGER, Permission.BACKUPS_WRITE), "run.cancel")


class Runs:
    """Run use cases; every look-up is scoped to the caller's workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def start(
        self,
        caller: Caller | Grant,
        backup_id: UUID,
        idempotency: IdempotencyKey | None = None,
    ) -> Run:
        """``POST /v1/runs``: a manual client starts a run of its active backup (``running``).

        Checks in the contract's order: 404 backup, 422 kind, 409 billing, 409 state.
        """
        caller, workspace_id = await self._access.resolve(caller, START_RUN)
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Run:
            backup = lookups.visible_backup(
                caller, await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            )
            ensure_manual(backup)
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            await change.gate(GatedOperation.NEW_RUN, lock=False)
            backup.ensure_runnable()
            run = Run.manual(self._deps.ids.new_id(), backup, now)
            await uow.runs.add(run)
            change.collect(created("run.create", run))
            return run

        return await run_idempotent(self._deps, caller, idempotency, now, store, ResultForm(Run))

    async def trigger(
        self,
        caller: Caller | Grant,
        backup_id: UUID,
        idempotency: IdempotencyKey | None = None,
    ) -> Run:
        """``POST /v1/backups/{bid}/trigger``: enqueue a run of a local or cloud backup
        (``queued``, trigger ``api``); its worker or the service takes it later."""
        caller, workspace_id = await self._access.resolve(
            caller, TRIGGER_BACKUP, target_id=backup_id
        )
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Run:
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            ensure_triggerable(backup)
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            await change.gate(GatedOperation.NEW_RUN, lock=False)
            backup.ensure_runnable()
            run = Run.queued(self._deps.ids.new_id(), backup, RunTrigger.API, now)
            await uow.runs.add(run)
            change.collect(Recorded("backup.trigger", backup.id, diff({}, {"run_id": str(run.id)})))
            await uow.runs.announce_queued(workspace_id, run.worker_id)
            return run

        run = await run_idempotent(self._deps, caller, idempotency, now, store, ResultForm(Run))
        self._deps.signals.announce(workspace_id, run.worker_id)
        return run

    async def get(self, caller: Caller | Grant, run_id: UUID) -> Run:
        """One run of the caller's workspace."""
        caller, workspace_id = await self._access.resolve(caller, READ_RUN)
        async with self._deps.uow() as uow:
            return await lookups.visible_run(
                caller, uow, workspace_id, await uow.runs.get(workspace_id, run_id)
            )

    async def list_for_backup(
        self,
        caller: Caller | Grant,
        backup_id: UUID,
        state: RunState | None,
        page: PageRequest,
    ) -> Page[Run]:
        """``GET /v1/backups/{bid}/runs``: a backup's runs, newest first (only those in
        ``state``, when given). A backup the caller cannot see is 404, whether it belongs to
        another workspace, to another worker, or does not exist."""
        caller, workspace_id = await self._access.resolve(caller, READ_RUN)
        async with self._deps.uow() as uow:
            lookups.visible_backup(caller, await lookups.backup(uow, workspace_id, backup_id))
            return await uow.runs.list_for_backup(workspace_id, backup_id, state, page)

    async def cancel(self, caller: Caller | Grant, run_id: UUID) -> Run:
        """``POST /v1/runs/{id}/cancel``: a ``queued`` run is ``cancelled`` at once, a
        ``running`` one gets ``cancel_requested`` (its holder stops it); a finished run is
        409 ``invalid_state``. Audited as ``run.cancel``; never refused for billing (it
        stops work, it starts none)."""
        caller, workspace_id = await self._access.resolve(caller, CANCEL_RUN, target_id=run_id)
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            found = await uow.runs.get(workspace_id, run_id, for_update=True)
            run = await lookups.visible_run(caller, uow, workspace_id, found)
            cancelled = run.request_cancel(self._deps.clock.now())
            if cancelled != run:
                await uow.runs.update(cancelled)
            change.collect(changed("run.cancel", run, cancelled))
        return cancelled
