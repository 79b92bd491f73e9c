"""Restores (contract 11): ask the service to put a cloud artifact back, read how it went,
and the service-side runner that does the work.

``create`` checks everything it can up front (the artifact, the kind rules, the target's
literal address, billing) and records a ``queued`` restore with the target's credentials
sealed, then wakes the runners (``wakeup``: the run signals, across processes on
PostgreSQL). The runner (``run_queued``, in ``serve`` on a wake-up or at the latest every
``STRONGROOM_RESTORE_POLL`` seconds) takes queued restores one at a time (a locking read
that skips rows other runners hold, so one runner wins each), marks it ``running`` and
commits, then streams the artifact from storage into the target outside any transaction,
and records ``succeeded`` or ``failed`` with the credentials erased, audited as
``restore.finish`` by ``system``.

A running restore is held on a lease (``RESTORE_LEASE`` unless the runner is given
another), renewed every quarter of it while the artifact streams. A runner that dies
(SIGKILL, a lost machine) stops renewing: the next ``run_queued`` of any runner first
queues such a restore again as its next attempt (``restore.requeue``), up to
``MAX_RESTORE_ATTEMPTS``, then fails it as interrupted (``restore.finish``). A runner that
finds on renewal that its restore was taken from it stops streaming and records nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from uuid import UUID

from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import Backup, Source, check_credentials_shape
from strongroom.domain.errors import StrongroomError
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.restores import (
    INTERRUPTED,
    RESTORE_LEASE,
    Restore,
    RestoreState,
    check_restorable,
    check_restore_kind,
    check_target_endpoint,
)
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driven.storage import ObjectReader
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving import lookups
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.changes import WorkspaceChange
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent
from strongroom.ports.driving.notifications import notify_restore
from strongroom.ports.driving.recording import record_by_system
from strongroom.ports.driving.threads import run_to_the_end

logger = logging.getLogger(__name__)

CREATE_RESTORE = Requirement(
    (Permission.BACKUPS_WRITE,), "restore.create", also=(Permission.ARTIFACTS_DOWNLOAD,)
)
READ_RESTORE = Requirement((Permission.ARTIFACTS_READ, Permission.BACKUPS_READ))
# A replay of a create: the restore as first answered. Its sealed credentials stay only in
# the restore's own record, which erases them when it finishes; the key does not keep them.
CREATED_RESTORE = ResultForm(Restore, withheld=("sealed_credentials",))
# Restores one call of the runner takes at most.
BATCH = 10
CHUNK = 1024 * 1024
UNEXPECTED = "the restore failed on an unexpected error of the service (logged)"


def restore_snapshot(restore: Restore) -> dict[str, JsonValue]:
    """What the audit trail shows of a restore (never a credential)."""
    target: dict[str, JsonValue] = {"type": restore.target.type}
    target.update(
        {
            name: getattr(restore.target, name)
            for name in ("endpoint", "bucket", "prefix", "host", "port", "database")
            if hasattr(restore.target, name)
        }
    )
    return {
        "artifact_id": str(restore.artifact_id),
        "state": restore.state.value,
        "attempt": restore.attempt,
        "target": target,
        "error": restore.error,
    }


class _Hashing:
    """An object stream that counts and hashes what is read through it."""

    def __init__(self, inner: ObjectReader) -> None:
        self._inner = inner
        self._digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._inner.read(size)
        self._digest.update(data)
        self.size += len(data)
        return data

    def close(self) -> None:
        """Closing is the runner's (after ``drain``)."""

    def drain(self) -> None:
        """Read what the target left unread (an archive's end padding)."""
        while self.read(CHUNK):
            pass

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


class Restores:
    """Create and read restores; run the queued ones (the service's side)."""

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
            await change.record("restore.create", restore.id, diff({}, restore_snapshot(restore)))
            # Restore runners wait on the run signals' channel too (``wakeup``): the same
            # NOTIFY at commit reaches those of other processes.
            await uow.runs.announce_queued(workspace_id)
            return restore

        restore = await run_idempotent(self._deps, caller, idempotency, now, store, CREATED_RESTORE)
        self._deps.signals.announce(workspace_id)
        return restore

    def wakeup(self) -> Wakeup:
        """A ticket for the next announcement of queued work in any workspace (a restore
        asked for, and also a queued run: one spurious look): take it before looking for
        queued restores, then wait on it with the poll interval as timeout."""
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

    async def run_queued(
        self, limit: int = BATCH, lease: timedelta = RESTORE_LEASE
    ) -> list[Restore]:
        """Requeue (or fail) restores whose runner died (``expire_leases``), then run
        queued restores one after another until none is left (at most ``limit``), each
        held on ``lease``; the finished restores. Safe with any number of runners."""
        await self.expire_leases()
        finished: list[Restore] = []
        for _ in range(limit):
            done = await self.run_next(lease)
            if done is None:
                break
            finished.append(done)
        return finished

    async def run_next(self, lease: timedelta = RESTORE_LEASE) -> Restore | None:
        """Take the oldest queued restore, run it (renewing its lease every quarter of
        ``lease``) and record how it ended; None when none is queued. A restore taken
        from this runner meanwhile (its lease ran out) is returned as it now is."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            queued = await uow.restores.next_queued()
            if queued is None:
                return None
            running = queued.start(now, lease)
            await uow.restores.update(running)
            await uow.commit()
        work = asyncio.ensure_future(self._execute(running))
        try:
            while True:
                done, _ = await asyncio.wait({work}, timeout=lease.total_seconds() / 4)
                if done:
                    break
                current = await self._renew(running, lease)
                if current is not None and not current.holds(running):
                    logger.warning("restore %s was taken from this runner", running.id)
                    work.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await work
                    return current
        except asyncio.CancelledError:
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            # The service is stopping: record why, so the restore is not left running.
            await asyncio.shield(self._finish(running, INTERRUPTED))
            raise
        return await self._finish(running, work.result())

    async def _renew(self, running: Restore, lease: timedelta) -> Restore | None:
        """Extend the lease of the restore this runner holds; the restore as it now is
        (None if it went away, or when the renewal itself failed: it tries again)."""
        try:
            async with self._deps.uow() as uow:
                current = await uow.restores.get(running.workspace_id, running.id, for_update=True)
                if current is None or not current.holds(running):
                    return current
                renewed = current.renew(self._deps.clock.now(), lease)
                await uow.restores.update(renewed)
                await uow.commit()
            return renewed
        except Exception:
            logger.exception("renewing the lease of restore %s failed", running.id)
            return None

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
                await record_by_system(
                    self._deps,
                    uow,
                    after.workspace_id,
                    action,
                    after.id,
                    diff(restore_snapshot(current), restore_snapshot(after)),
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

    async def _execute(self, restore: Restore) -> str | None:
        """Do the restore; None when it succeeded, else why it failed (no secret)."""
        try:
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
            credentials = self._deps.secrets.open(restore.sealed_credentials)
            await self._stream(artifact, backup, restore, credentials)
        except RestoreFailedError as error:
            return str(error)
        except StrongroomError as error:
            return error.message
        except Exception:
            logger.exception("restore %s of workspace %s failed", restore.id, restore.workspace_id)
            return UNEXPECTED
        return None

    async def _stream(
        self, artifact: Artifact, backup: Backup, restore: Restore, credentials: Mapping[str, str]
    ) -> None:
        """Stream the artifact into the target, hashing what is read: bytes that are not
        the artifact's recorded size and sha256 (changed in storage) fail the restore."""
        storage = self._artifacts.storage_for(artifact, backup)
        opened = await run_to_the_end(
            functools.partial(storage.open_object, artifact.object_key), _close_if_opened
        )
        if opened is None:
            raise RestoreFailedError("the artifact's object is missing from storage")
        reader = _Hashing(opened)
        try:
            await self._deps.restore_targets.restore(reader, restore.target, credentials)
            await asyncio.to_thread(reader.drain)
        finally:
            await run_to_the_end(opened.close)
        if (reader.size, reader.sha256) != (artifact.size, artifact.sha256):
            raise RestoreFailedError(
                "the artifact's bytes in storage do not match its recorded size and sha256 "
                "(damaged in storage): what was written to the target cannot be trusted"
            )

    async def _finish(self, running: Restore, error: str | None) -> Restore:
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
            await record_by_system(
                self._deps,
                uow,
                after.workspace_id,
                "restore.finish",
                after.id,
                diff(restore_snapshot(current), restore_snapshot(after)),
            )
            await uow.commit()
        if error is None:
            logger.info("restore %s succeeded", after.id)
        else:
            logger.warning("restore %s failed: %s", after.id, error)
        return after


def _close_if_opened(opened: ObjectReader | None) -> None:
    """Close the object a cancelled restore opened after it stopped waiting for it."""
    if opened is not None:
        opened.close()
