"""Backup use cases: create, list, read, change, pause, resume, delete."""

from __future__ import annotations

import logging
from typing import TypeVar
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import JsonValue, creation, diff
from strongroom.domain.backups import (
    UNSET,
    Backup,
    BackupChanges,
    BackupKind,
    DrillPolicy,
    check_drill,
    check_encryption_kind,
)
from strongroom.domain.billing import GatedOperation
from strongroom.domain.encryption import Encryption
from strongroom.domain.errors import (
    ArtifactLockedError,
    NotFoundError,
    UpstreamUnavailableError,
)
from strongroom.domain.events import Recorded
from strongroom.domain.keep_rules import KeepRules
from strongroom.domain.names import clean_name
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Admission, usage_bound
from strongroom.ports.driven.repositories import CountedWorkspace, Rendered
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import (
    Access,
    Bearer,
    Grant,
    JoinedRead,
    Requirement,
    is_session,
)
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent
from strongroom.ports.driving.preconditions import Precondition, check_precondition
from strongroom.ports.driving.recording import caller_event

logger = logging.getLogger(__name__)

READ_BACKUPS = Requirement((Permission.BACKUPS_READ,))
CREATE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.create")
UPDATE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.update")
PAUSE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.pause")
RESUME_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.resume")
DELETE_BACKUP = Requirement((Permission.BACKUPS_WRITE,), "backup.delete")
ADMIT_BACKUP = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.BACKUPS_PER_WORKSPACE)
# How often one create decides again after losing the race for its count: a lost race
# means the count reached the bound (the next decision refuses) or moved between a delete
# and other creates, so a handful is plenty.
ADMISSION_ATTEMPTS = 8

# What a session's joined read answers: a page (or its JSON), a backup (or its JSON).
Listed = TypeVar("Listed")
Found = TypeVar("Found")


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
        else f"expire_after={retention.expire_after} lock_for={retention.lock_for}"
        + _kept(retention.keep),
        "destination": backup.destination.type,
        # Public keys only: the recipients a snapshot backup seals to.
        "encryption": None if backup.encryption is None else list(backup.encryption.recipients),
        "drill": None
        if backup.drill is None
        else f"{backup.drill.schedule.cron} ({backup.drill.schedule.timezone})"
        f" target={backup.drill.target.type}",
    }


def _kept(keep: KeepRules | None) -> str:
    """The keep rules as the audit trail shows them (nothing when not set)."""
    if keep is None:
        return ""
    counts = ",".join(f"{rule}:{count}" for rule, count in attrs.asdict(keep).items() if count)
    return f" keep={counts or 'none'}"


class Backups:
    """Backup use cases; every look-up is scoped to the caller's workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def create(
        self,
        caller: Caller | Bearer,
        workspace_id: UUID,
        name: str,
        kind: BackupKind,
        idempotency: IdempotencyKey | None = None,
        encryption: Encryption | None = None,
        drill: DrillPolicy | None = None,
    ) -> Backup:
        """Reserve a new backup in state ``draft`` (a snapshot backup with ``encryption``;
        drilled on ``drill``'s schedule once it is active).

        One path for every caller, in the contract's order of checks: the caller's checks
        (a session's ``Bearer`` in the look-up that reads the workspace and its count),
        the name, then the workspace's admission (billing, quota), decided here on what was
        read; the insert is guarded by the count it was decided on, and a create that lost
        that race to another reads again and decides again.
        """
        checked, counted = await self._admitting(caller, workspace_id)
        name = clean_name(name)
        if encryption is not None:
            check_encryption_kind(kind)
        if drill is not None:
            check_drill(kind, drill)
        now = self._deps.clock.now()

        # A key's unit holds its reservation: it reads the count again inside it.
        read = counted if idempotency is None else None

        async def store(uow: UnitOfWork) -> Backup:
            return await self._admit_and_add(
                uow, checked, workspace_id, read, name, kind, encryption, drill
            )

        if idempotency is not None:
            return await run_idempotent(
                self._deps, checked, idempotency, now, store, ResultForm(Backup)
            )
        async with self._deps.uow() as uow:
            backup = await store(uow)
            await uow.commit()
        return backup

    async def _admitting(
        self, caller: Caller | Bearer, workspace_id: UUID
    ) -> tuple[Caller, CountedWorkspace | None]:
        """The caller's checks for a create, and, for a session, the workspace with its
        backup count read in the look-up that checks it (one round trip)."""
        if isinstance(caller, Bearer):
            if is_session(caller):
                grant, counted = await self._access.authorize_joined_grant(
                    caller,
                    CREATE_BACKUP,
                    lambda uow, token_hash: uow.sessions.find_with_workspace(
                        token_hash, workspace_id
                    ),
                    workspace_id=workspace_id,
                )
                return grant.caller, counted
            caller = await self._access.authenticate(caller.token, caller.request_id)
        caller, _ = await self._access.resolve(caller, CREATE_BACKUP, workspace_id=workspace_id)
        return caller, None

    async def _admit_and_add(
        self,
        uow: UnitOfWork,
        caller: Caller,
        workspace_id: UUID,
        counted: CountedWorkspace | None,
        name: str,
        kind: BackupKind,
        encryption: Encryption | None = None,
        drill: DrillPolicy | None = None,
    ) -> Backup:
        """Decide on the workspace as read (``counted``, else read now) and add the backup
        and its event, guarded by the count decided on; read again on a lost race."""
        for _ in range(ADMISSION_ATTEMPTS):
            if counted is None:
                counted = await uow.workspaces.get_counted(workspace_id)
            if counted is None:
                raise NotFoundError("workspace")
            workspace = counted.workspace
            workspace.admit(ADMIT_BACKUP, counted.backups)
            backup = Backup.draft(
                self._deps.ids.new_id(),
                workspace_id,
                name,
                kind,
                self._deps.clock.now(),
                encryption,
                drill,
            )
            event = caller_event(
                self._deps,
                caller,
                workspace_id,
                "backup.create",
                backup.id,
                creation(audit_snapshot(backup)),
            )
            if await uow.backups.add_counted(backup, event, usage_bound(workspace, ADMIT_BACKUP)):
                return backup
            counted = None
        # Each lost race is another create won: only a flood of them gets here.
        raise UpstreamUnavailableError("too many concurrent creates in this workspace")

    async def list_in(
        self, caller: Caller | Bearer, workspace_id: UUID, page: PageRequest
    ) -> Page[Backup]:
        """A workspace's backups, newest first.

        With a session's ``Bearer`` the credential is checked in the same look-up as the
        page (one round trip); the checks and their order are those of a ``Caller``.
        """
        return await self._list(
            caller,
            workspace_id,
            page,
            lambda uow, token_hash: uow.sessions.find_with_backups(token_hash, workspace_id, page),
        )

    async def get(self, caller: Caller | Bearer, backup_id: UUID) -> Backup:
        """One backup of the caller's workspace (a worker sees only those assigned to it).

        With a session's ``Bearer`` the credential is checked in the same look-up as the
        backup (one round trip); the checks and their order are those of a ``Caller``.
        """
        return await self._get(
            caller,
            backup_id,
            lambda uow, token_hash: uow.sessions.find_with_backup(token_hash, backup_id),
        )

    async def list_rendered(
        self, caller: Caller | Bearer, workspace_id: UUID, page: PageRequest
    ) -> Page[Backup] | Rendered:
        """``list_in``, with a session's ``Bearer`` answered by the read model: the page
        as the API's JSON, as the store wrote it, read in the look-up that checks the credential.
        The checks, their order and their errors are ``list_in``'s; other callers get the
        ``Page`` of ``list_in``."""
        return await self._list(
            caller,
            workspace_id,
            page,
            lambda uow, token_hash: uow.sessions.find_with_backups_json(
                token_hash, workspace_id, page
            ),
        )

    async def get_rendered(self, caller: Caller | Bearer, backup_id: UUID) -> Backup | Rendered:
        """``get``, with a session's ``Bearer`` answered by the read model: the backup as
        the API's JSON, as the store wrote it, read in the look-up that checks the credential.
        The checks, their order and their errors are ``get``'s; other callers get the
        ``Backup`` of ``get``."""
        return await self._get(
            caller,
            backup_id,
            lambda uow, token_hash: uow.sessions.find_with_backup_json(token_hash, backup_id),
        )

    async def _list(
        self,
        caller: Caller | Bearer,
        workspace_id: UUID,
        page: PageRequest,
        joined: JoinedRead[Listed],
    ) -> Listed | Page[Backup]:
        """``list_in`` and ``list_rendered``: a session's page is what ``joined`` reads
        in the look-up that checks the credential."""
        if isinstance(caller, Bearer):
            if is_session(caller):
                listed = await self._access.authorize_joined(
                    caller, READ_BACKUPS, joined, workspace_id=workspace_id
                )
                assert listed is not None  # authorized: the session's own workspace
                return listed
            caller = await self._access.authenticate(caller.token, caller.request_id)
        caller, _ = await self._access.resolve(caller, READ_BACKUPS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.backups.list(workspace_id, page, worker_id=caller.worker_id)

    async def _get(
        self, caller: Caller | Bearer, backup_id: UUID, joined: JoinedRead[Found | None]
    ) -> Found | Backup:
        """``get`` and ``get_rendered``: a session's backup is what ``joined`` reads in
        the look-up that checks the credential (None: 404)."""
        if isinstance(caller, Bearer):
            if is_session(caller):
                found = await self._access.authorize_joined(caller, READ_BACKUPS, joined)
                return lookups.existing(found, "backup")
            caller = await self._access.authenticate(caller.token, caller.request_id)
        caller, workspace_id = await self._access.resolve(caller, READ_BACKUPS)
        async with self._deps.uow() as uow:
            return lookups.visible_backup(
                caller, await lookups.backup(uow, workspace_id, backup_id)
            )

    async def update(
        self,
        caller: Caller | Grant,
        backup_id: UUID,
        changes: BackupChanges,
        *,
        precondition: Precondition[Backup] | None = None,
    ) -> Backup:
        """Change a backup; it becomes ``active`` once its kind's configuration is complete.
        A ``precondition`` on the backup as it stands is checked on the locked row."""
        caller, workspace_id = await self._access.resolve(
            caller, UPDATE_BACKUP, target_id=backup_id
        )
        if changes.name is not UNSET:
            changes = _with_name(changes, clean_name(changes.name))
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            check_precondition(precondition, backup, "backup")
            worker_exists = changes.worker_id is not UNSET and await uow.workers.exists(
                workspace_id, changes.worker_id
            )
            checked = backup.check_kind_rules(
                changes, worker_exists=worker_exists, endpoints=self._deps.endpoint_policy
            )
            await change.gate()
            secrets = self._deps.secrets
            updated = backup.apply(
                checked,
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
            update = diff(audit_snapshot(backup), audit_snapshot(updated))
            change.collect(Recorded("backup.update", backup_id, update))
        return updated

    async def pause(self, caller: Caller | Grant, backup_id: UUID) -> Backup:
        """Stop scheduling a backup (idempotent); it keeps its state."""
        return await self._set_paused(caller, backup_id, paused=True)

    async def resume(self, caller: Caller | Grant, backup_id: UUID) -> Backup:
        """Resume scheduling a backup (idempotent)."""
        return await self._set_paused(caller, backup_id, paused=False)

    async def _set_paused(self, caller: Caller | Grant, backup_id: UUID, *, paused: bool) -> Backup:
        requirement = PAUSE_BACKUP if paused else RESUME_BACKUP
        caller, workspace_id = await self._access.resolve(caller, requirement, target_id=backup_id)
        async with changing(self._deps, caller, workspace_id) as change:
            backup = await lookups.backup(change.uow, workspace_id, backup_id, for_update=True)
            await change.gate()
            updated = backup.paused_as(paused, self._deps.clock.now())
            if updated is not backup:
                await change.uow.backups.update(updated)
            action = "backup.pause" if paused else "backup.resume"
            update = diff(audit_snapshot(backup), audit_snapshot(updated))
            change.collect(Recorded(action, backup_id, update))
        return updated

    async def delete(self, caller: Caller | Grant, backup_id: UUID) -> None:
        """Delete a backup."""
        caller, workspace_id = await self._access.resolve(
            caller, DELETE_BACKUP, target_id=backup_id
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            backup = await lookups.backup(uow, workspace_id, backup_id, for_update=True)
            workspace = await change.gate()
            if await uow.artifacts.any_locked(
                workspace_id, self._deps.clock.now(), backup_id=backup_id
            ):
                raise ArtifactLockedError("an artifact of this backup is inside its lock window")
            prefix = f"{workspace.storage_namespace}/{backup_id}"
            await uow.backups.remove(workspace_id, backup_id)
            change.collect(Recorded("backup.delete", backup_id, diff(audit_snapshot(backup), {})))
        try:
            await self._deps.storage.delete_prefix(prefix)
        except Exception:
            logger.exception("objects of deleted backup %s were left in storage", backup_id)


def _with_name(changes: BackupChanges, name: str) -> BackupChanges:
    return attrs.evolve(changes, name=name)
