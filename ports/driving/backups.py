"""Backup use cases: create, list, read, change, pause, resume, delete."""

from __future__ import annotations

import logging
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import UNSET, Backup, BackupChanges, BackupKind
from strongroom.domain.billing import GatedOperation, ensure_allowed
from strongroom.domain.errors import ArtifactLockedError
from strongroom.domain.names import clean_name
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource, ensure_room
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving import lookups
from strongroom.ports.driving.access import Access, Requirement
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, run_idempotent
from strongroom.ports.driving.recording import record_by_caller

logger = logging.getLogger(__name__)

READ_BACKUPS = Requirement((Permission.BACKUPS_READ,))
CREATE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.create")
UPDATE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.update")
PAUSE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.pause")
RESUME_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.resume")
DELETE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.delete")


def audit_snapshot(backup: Backup) -> dict[str, JsonValue]:
    """What the audit trail shows of a backup: its public fields, never a secret."""
    retention = backup.retention
    return {
        "name": backup.name,
        "state": backup.state.value,
        "paused": backup.paused,
        "source": None if backup.source is None else backup.source.type,
        "has_credentials": backup.has_credentials,
        "schedule": None
        if backup.schedule is None
        else f"{backup.schedule.cron} ({backup.schedule.timezone})",
        "worker_id": None if backup.worker_id is None else str(backup.worker_id),
        "retention": None
        if retention is None
        else f"expire_after={retention.expire_after} lock_for={retention.lock_for}",
        "destination": backup.destination.type,
    }


class Backups:
    """Backup use cases; every look-up is scoped to the caller's workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def create(
        self,
        caller: Caller,
        workspace_id: UUID,
        name: str,
        kind: BackupKind,
        idempotency: IdempotencyKey[Backup] | None = None,
    ) -> Backup:
        """Reserve a new backup in state ``draft``."""
        await self._access.authorize(caller, CREATE_BACKUP, workspace_id=workspace_id)
        name = clean_name(name)
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Backup:
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            ensure_allowed(workspace.billing_state, GatedOperation.CONFIG_WRITE)
            resource = QuotaResource.BACKUPS_PER_WORKSPACE
            ensure_room(resource, workspace.limit(resource), await uow.backups.count(workspace_id))
            backup = Backup.draft(self._deps.ids.new_id(), workspace_id, name, kind, now)
            await uow.backups.add(backup)
            await record_by_caller(
                self._deps,
                uow,
                caller,
                workspace_id,
                "backup.create",
                backup.id,
                diff({}, audit_snapshot(backup)),
            )
            return backup

        return await run_idempotent(self._deps.uow, caller, idempotency, now, store)

    async def list_in(self, caller: Caller, workspace_id: UUID, page: PageRequest) -> Page[Backup]:
        """A workspace's backups, newest first."""
        await self._access.authorize(caller, READ_BACKUPS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.backups.list(workspace_id, page, worker_id=caller.worker_id)

    async def get(self, caller: Caller, backup_id: UUID) -> Backup:
        """One backup of the caller's workspace (a worker sees only those assigned to it)."""
        workspace_id = await self._access.authorize(caller, READ_BACKUPS)
        async with self._deps.uow() as uow:
            return lookups.visible_backup(
                caller, await lookups.backup(uow, workspace_id, backup_id)
            )

    async def update(self, caller: Caller, backup_id: UUID, changes: BackupChanges) -> Backup:
        """Change a backup; it becomes ``active`` once its kind's configuration is complete."""
        workspace_id = await self._access.authorize(caller, UPDATE_BACKUP, target_id=backup_id)
        if changes.name is not UNSET:
            changes = _with_name(changes, clean_name(changes.name))
        async with self._deps.uow() as uow:
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            worker_exists = changes.worker_id is not UNSET and await uow.workers.exists(
                workspace_id, changes.worker_id
            )
            backup.check_kind_rules(
                changes, worker_exists=worker_exists, endpoints=self._deps.endpoint_policy
            )
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            ensure_allowed(workspace.billing_state, GatedOperation.CONFIG_WRITE)
            secrets = self._deps.secrets
            updated = backup.apply(
                changes,
                self._deps.clock.now(),
                sealed_credentials=None
                if changes.credentials is UNSET
                else secrets.seal(changes.credentials),
                sealed_destination_credentials=None
                if changes.destination_credentials is UNSET
                else secrets.seal(changes.destination_credentials),
            )
            if updated is not backup:
                await uow.backups.update(updated)
            await record_by_caller(
                self._deps,
                uow,
                caller,
                workspace_id,
                "backup.update",
                backup_id,
                diff(audit_snapshot(backup), audit_snapshot(updated)),
            )
            await uow.commit()
        return updated

    async def pause(self, caller: Caller, backup_id: UUID) -> Backup:
        """Stop scheduling a backup (idempotent); it keeps its state."""
        return await self._set_paused(caller, backup_id, paused=True)

    async def resume(self, caller: Caller, backup_id: UUID) -> Backup:
        """Resume scheduling a backup (idempotent)."""
        return await self._set_paused(caller, backup_id, paused=False)

    async def _set_paused(self, caller: Caller, backup_id: UUID, *, paused: bool) -> Backup:
        requirement = PAUSE_BACKUP if paused else RESUME_BACKUP
        workspace_id = await self._access.authorize(caller, requirement, target_id=backup_id)
        async with self._deps.uow() as uow:
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            ensure_allowed(workspace.billing_state, GatedOperation.CONFIG_WRITE)
            updated = backup.paused_as(paused, self._deps.clock.now())
            if updated is not backup:
                await uow.backups.update(updated)
            action = "backup.pause" if paused else "backup.resume"
            await record_by_caller(
                self._deps,
                uow,
                caller,
                workspace_id,
                action,
                backup_id,
                diff(audit_snapshot(backup), audit_snapshot(updated)),
            )
            await uow.commit()
        return updated

    async def delete(self, caller: Caller, backup_id: UUID) -> None:
        """Delete a backup."""
        workspace_id = await self._access.authorize(caller, DELETE_BACKUP, target_id=backup_id)
        async with self._deps.uow() as uow:
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            ensure_allowed(workspace.billing_state, GatedOperation.CONFIG_WRITE)
            if await uow.artifacts.any_locked(
                workspace_id, self._deps.clock.now(), backup_id=backup_id
            ):
                raise ArtifactLockedError("an artifact of this backup is inside its lock window")
            prefix = f"{workspace.storage_namespace}/{backup_id}"
            await uow.backups.remove(workspace_id, backup_id)
            await record_by_caller(
                self._deps,
                uow,
                caller,
                workspace_id,
                "backup.delete",
                backup_id,
                diff(audit_snapshot(backup), {}),
            )
            await uow.commit()
        try:
            await self._deps.storage.delete_prefix(prefix)
        except Exception:
            logger.exception("objects of deleted backup %s were left in storage", backup_id)


def _with_name(changes: BackupChanges, name: str) -> BackupChanges:
    return attrs.evolve(changes, name=name)
