"""Restores (contract 11): ask the service to put a cloud artifact back, read how it went,
and the steps of the service-side runner (``adapters/runtime/restores.py`` runs them).

``create`` checks everything it can up front (the artifact, the kind rules, the target's
literal address, billing) and records a ``queued`` restore with the target's credentials
sealed, then wakes the runners (``wakeup``: the run signals, across processes on
PostgreSQL). The runner (``RestoreRunner.run_queued``, in ``serve`` on a wake-up or at the
latest every ``STRONGROOM_RESTORE_POLL`` seconds) takes queued restores one at a time
(``take_next``: a locking read that skips rows other runners hold, so one runner wins
each, marked ``running`` and committed), streams the artifact from storage into the
target outside any transaction (``source``), and records ``succeeded`` or ``failed`` with
the credentials erased (``finish``), audited as ``restore.finish`` by ``system``.

A running restore is held on a lease (``RESTORE_LEASE`` unless the runner is given
another), renewed every quarter of it while the artifact streams. A runner that dies
(SIGKILL, a lost machine) stops renewing: the next look of any runner first queues such
a restore again (``expire_leases``) as its next attempt (``restore.requeue``), up to
``MAX_RESTORE_ATTEMPTS``, then fails it as interrupted (``restore.finish``). A runner that
finds on renewal that its restore was taken from it stops streaming and records nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import Source, check_credentials_shape
from strongroom.domain.events import changed, created
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.restores import (
    RESTORE_LEASE,
    Restore,
    RestoreState,
    check_restorable,
    check_restore_kind,
    check_target_endpoint,
)
from strongroom.ports.driven.restore_targets import RestoreTargets
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.changes import WorkspaceChange
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent
from strongroom.ports.driving.notifications import notify_restore
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

CREATE_RESTORE = Requirement(
    (Permission.BACKUPS_WRITE,), "restore.create", also=(Permission.ARTIFACTS_DOWNLOAD,)
)
READ_RESTORE = Requirement((Permission.ARTIFACTS_READ, Permission.BACKUPS_READ))
# A replay of a create: the restore as first answered. Its sealed credentials stay only in
# the restore's own record, which erases them when it finishes; the key does not keep them.
CREATED_RESTORE = ResultForm(Restore, withheld=("sealed_credentials",))
# Running restores whose lease ran out, requeued per look.
BATCH = 10


@attrs.frozen
class RestoreSource:
    """What a runner streams into a restore's target: the artifact, the storage holding
    it, the target's opened credentials, and the targets that write it."""

    storage: ObjectStorage
    artifact: Artifact
    credentials: Mapping[str, str] = attrs.field(repr=False)
    targets: RestoreTargets


class Restores:
    """Create and read restores; take, renew and finish queued ones (the runner's steps)."""

    def __init__(self, deps: Dependencies, access: Access, artifacts: Artifacts) -> None:
        self._deps = deps
        self._access = access
        self._artifacts = artifacts

    async def create(
        self,
        caller: Caller | Grant,
        artifact_id: UUID,
        target: Source,
        credentials: Mapping[str, str],
        idempotency: IdempotencyKey | None = None,
    ) -> Restore:
        """``POST /v1/artifacts/{aid}/restores``: a ``queued`` restore of the artifact
        into ``target``. Needs ``backups:write`` and ``artifacts:download``. Refused: an
        artifact not in the workspace (404); one of a local or manual backup, a target of
        another type than the backup's source, credentials of another type's shape or a
        target at a disallowed literal address (422 ``validation_failed``); a blocked
        workspace (409 ``billing_restricted``); a deleted artifact (409 ``conflict``) or
        one not confirmed yet (409 ``invalid_state``). Audited as ``restore.create``.

        With ``idempotency``, a repeat of the same request within 24 h returns the first
        restore as it was answered (without its sealed credentials, which are not kept
        with the key) and creates nothing; the same key for another request is 409
        ``idempotency_conflict``."""
        caller, workspace_id = await self._access.resolve(
            caller, CREATE_RESTORE, target_id=artifact_id
        )
        check_credentials_shape(credentials, "credentials")
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Restore:
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            artifact = lookups.existing(
                await uow.artifacts.get(workspace_id, artifact_id), "artifact"
            )
            backup = await lookups.backup(uow, workspace_id, artifact.backup_id)
            restorable = check_restore_kind(backup, target, credentials)
            check_target_endpoint(restorable, self._deps.endpoint_policy)
            await change.gate(lock=False)
            check_restorable(artifact)
            restore = Restore.queued(
                self._deps.ids.new_id(),
                workspace_id,
                artifact.id,
                restorable,
                self._deps.secrets.seal(credentials),
                now,
            )
            await uow.restores.add(restore)
            change.collect(created("restore.create", restore))
            # Restore runners wait on the run signals' channel too (``wakeup``): the same
            # NOTIFY at commit reaches those of other processes.
            await uow.runs.announce_queued(workspace_id, None)
            return restore

        restore = await run_idempotent(self._deps, caller, idempotency, now, store, CREATED_RESTORE)
        self._deps.signals.announce(workspace_id, None)
        return restore

    def wakeup(self) -> Wakeup:
        """A ticket for the next announcement of the service's work in any workspace (a
        restore asked for, and also a cloud run or a drill: one spurious look): take it
        before looking for queued restores, then wait on it with the poll interval as
        timeout."""
        return self._deps.signals.watch_any()

    async def get(self, caller: Caller | Grant, restore_id: UUID) -> Restore:
        """``GET /v1/restores/{id}``: a restore of the caller's workspace (404 otherwise,
        the same as for an id that names nothing)."""
        _caller, workspace_id = await self._access.resolve(caller, READ_RESTORE)
        async with self._deps.uow() as uow:
            found = await uow.restores.get(workspace_id, restore_id)
        return lookups.existing(found, "restore")

    # ----------------------------------------------------------------------------------
    # The service's side

    async def take_next(self, lease: timedelta = RESTORE_LEASE) -> Restore | None:
        """The oldest queued restore, now ``running`` on ``lease`` and committed (a locking
        read that skips rows other runners hold); None when none is queued."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            queued = await uow.restores.next_queued()
            if queued is None:
                return None
            running = queued.start(now, lease)
            await uow.restores.update(running)
            await uow.commit()
        return running

    async def renew(self, running: Restore, lease: timedelta) -> Restore | None:
        """Extend the lease of the restore this runner holds; the restore as it now is
        (None if it went away)."""
        async with self._deps.uow() as uow:
            current = await uow.restores.get(running.workspace_id, running.id, for_update=True)
            if current is None or not current.holds(running):
                return current
            renewed = current.renew(self._deps.clock.now(), lease)
            await uow.restores.update(renewed)
            await uow.commit()
        return renewed

    async def expire_leases(self, now: datetime | None = None, limit: int = BATCH) -> int:
        """Queue again (or fail, after the last attempt) the running restores whose
        runner stopped renewing them; how many. Audited ``restore.requeue`` or
        ``restore.finish`` by ``system``."""
        now = now or self._deps.clock.now()
        async with self._deps.uow() as uow:
            expired = await uow.restores.lease_expired(now, limit)
        count = 0
        for candidate in expired:
            async with self._deps.uow() as uow:
                current = await uow.restores.get(
                    candidate.workspace_id, candidate.id, for_update=True
                )
                if current is None or not current.lease_expired(now):
                    continue  # a renewal or another runner came first
                after = current.expire_lease(now)
                await uow.restores.update(after)
                action = (
                    "restore.requeue" if after.state is RestoreState.QUEUED else "restore.finish"
                )
                uow.collect(
                    by_system(self._deps, after.workspace_id, changed(action, current, after))
                )
                await uow.commit()
            logger.warning(
                "restore %s: its runner stopped renewing its lease; now %s (attempt %d)",
                after.id,
                after.state.value,
                after.attempt,
            )
            count += 1
        return count

    async def source(self, restore: Restore) -> RestoreSource | str:
        """What a runner streams for ``restore``; why it cannot, when the artifact went
        away or the credentials are gone (no secret in it)."""
        async with self._deps.uow() as uow:
            artifact = await uow.artifacts.get(restore.workspace_id, restore.artifact_id)
            backup = (
                None
                if artifact is None
                else await uow.backups.get(restore.workspace_id, artifact.backup_id)
            )
        if artifact is None or backup is None or artifact.state is not ArtifactState.AVAILABLE:
            return "the artifact is no longer available"
        if restore.sealed_credentials is None:
            return "the restore's credentials are gone"
        return RestoreSource(
            storage=self._artifacts.storage_for(artifact, backup),
            artifact=artifact,
            credentials=self._deps.secrets.open(restore.sealed_credentials),
            targets=self._deps.restore_targets,
        )

    async def finish(self, running: Restore, error: str | None) -> Restore:
        """Record the end under the row lock; the restore as it then is (as it was taken,
        when its artifact or workspace went away meanwhile)."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            current = await uow.restores.get(running.workspace_id, running.id, for_update=True)
            if current is None or not current.holds(running):
                return current or running
            after = current.succeed(now) if error is None else current.fail(error, now)
            await uow.restores.update(after)
            await notify_restore(self._deps, uow, after)
            finished = changed("restore.finish", current, after)
            uow.collect(by_system(self._deps, after.workspace_id, finished))
            await uow.commit()
        if error is None:
            logger.info("restore %s succeeded", after.id)
        else:
            logger.warning("restore %s failed: %s", after.id, error)
        return after
