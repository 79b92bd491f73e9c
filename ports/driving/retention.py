"""The retention job: removes expired artifacts, aborts stale multipart uploads and purges
expired idempotency keys and failed sign-in records.

It never removes a backup's last available artifact, nor a locked one (and storage would
refuse the latter anyway). Each removal is its own unit of work, audited as ``system`` in
the artifact's workspace as ``artifact.delete``; a failure on one artifact is logged and
the job goes on with the next.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from strongroom.domain.accounts import FAILED_LOGIN_WINDOW
from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.errors import ArtifactLockedError, StrongroomError
from strongroom.domain.events import changed
from strongroom.ports.driving.artifacts import Artifacts, uncount
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import KEY_LIFETIME
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

# Multipart uploads begun longer ago than this are aborted (a client resumes within a day).
STALE_UPLOAD_AGE = timedelta(days=1)
# Expired artifacts looked at per run of the job.
BATCH = 10_000


@attrs.frozen
class RetentionReport:
    """What one run of the job did."""

    removed: int
    kept_last: int
    kept_locked: int
    failed: int
    aborted_uploads: int
    purged_idempotency_keys: int = 0
    purged_failed_logins: int = 0


class Retention:
    """The retention job, run by ``strongroom retention run`` and inside ``serve``."""

    def __init__(self, deps: Dependencies, artifacts: Artifacts) -> None:
        self._deps = deps
        self._artifacts = artifacts

    async def run(self) -> RetentionReport:
        """Remove what expired; abort stale uploads."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            expired = await uow.artifacts.expired(now, BATCH)
        counts = {"removed": 0, "kept_last": 0, "kept_locked": 0, "failed": 0}
        for candidate in expired:
            try:
                counts[(await self._remove(candidate.workspace_id, candidate.id))] += 1
            except StrongroomError:
                logger.exception("retention could not remove artifact %s", candidate.id)
                counts["failed"] += 1
        aborted = 0
        for upload in await self._deps.storage.pending_uploads(now - STALE_UPLOAD_AGE):
            try:
                await self._deps.storage.abort_multipart(upload.key, upload.upload_id)
                aborted += 1
            except StrongroomError:
                logger.exception("retention could not abort upload %s", upload.upload_id)
        keys, failures = await self._purge(now)
        report = RetentionReport(
            aborted_uploads=aborted,
            purged_idempotency_keys=keys,
            purged_failed_logins=failures,
            **counts,
        )
        logger.info("retention: %s", report)
        return report

    async def _purge(self, now: datetime) -> tuple[int, int]:
        """Delete idempotency keys past their lifetime and failed approvals past every
        rate-limit window: how many of each. Nothing reads either any more."""
        async with self._deps.uow() as uow:
            keys = await uow.idempotency.purge(now - KEY_LIFETIME)
            failures = await uow.accounts.purge_failed_logins(now - FAILED_LOGIN_WINDOW)
            await uow.commit()
        return keys, failures

    async def _remove(self, workspace_id: UUID, artifact_id: UUID) -> str:
        """Remove one expired artifact; the name of the count its outcome adds to."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            artifact = await uow.artifacts.get(workspace_id, artifact_id, for_update=True)
            if artifact is None or artifact.state is not ArtifactState.AVAILABLE:
                return "removed"  # another removal came first
            if artifact.is_locked(now):
                return "kept_locked"
            if await uow.artifacts.count_available(artifact.workspace_id, artifact.backup_id) <= 1:
                return "kept_last"
            backup = await uow.backups.get(artifact.workspace_id, artifact.backup_id)
            if backup is None:
                return "removed"  # its backup went, and the artifact with it
            try:
                await self._artifacts.remove_object(artifact, backup)
            except ArtifactLockedError:
                return "kept_locked"
            deleted = artifact.deleted()
            await uow.artifacts.update(deleted)
            await uncount(uow, artifact)
            removal = changed("artifact.delete", artifact, deleted)
            uow.collect(by_system(self._deps, artifact.workspace_id, removal))
            await uow.commit()
        return "removed"
