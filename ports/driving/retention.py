"""Retention: the explained verdicts of a backup's runs (``explain``, ``preview``) and the
job that removes what expired, aborts stale multipart uploads and purges expired
idempotency keys and failed sign-in records.

A backup whose policy has keep rules, or whose runs reference artifacts (snapshots), is
decided run by run by ``retention_plan.plan``, the function the explain endpoint answers
from: the job removes exactly the artifacts of the runs it lists as expiring (and that no
live run references). Any other backup keeps today's rule: an artifact expires by its own
``expires_at``, and a backup's last available artifact is never removed. Nothing locked
or held is ever removed (storage would refuse the former anyway). Removals are audited as
``system`` in the artifact's workspace as ``artifact.delete``; a failure is logged and the
job goes on with the next.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.accounts import FAILED_LOGIN_WINDOW
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import Backup, RetentionPolicy
from strongroom.domain.errors import ArtifactLockedError, InvalidStateError, StrongroomError
from strongroom.domain.events import changed
from strongroom.domain.keep_rules import Verdict
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.retention_plan import Plan, StoredArtifact, plan, zone_of
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts, uncount
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import KEY_LIFETIME
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

# Multipart uploads begun longer ago than this are aborted (a client resumes within a day).
STALE_UPLOAD_AGE = timedelta(days=1)
# Expired artifacts looked at per run of the job (and artifacts the keep rules remove).
BATCH = 10_000
# Artifacts removed by the keep rules per unit of work (one S3 DeleteObjects request holds
# 1 000 versions).
CHUNK = 1_000
READ_RETENTION = Requirement((Permission.BACKUPS_READ,))


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
    kept_held: int = 0


async def decide(
    uow: UnitOfWork, backup: Backup, policy: RetentionPolicy, now: datetime
) -> Plan[StoredArtifact]:
    """The plan of ``policy`` for the backup's runs as the store holds them now."""
    workspace_id, backup_id = backup.workspace_id, backup.id
    return plan(
        policy,
        zone_of(backup),
        await uow.retention.finished_runs(workspace_id, backup_id),
        await uow.retention.available_artifacts(workspace_id, backup_id),
        await uow.retention.references(workspace_id, backup_id),
        now,
    )


class Retention:
    """The explained verdicts, and the retention job (``strongroom retention run`` and
    inside ``serve``)."""

    def __init__(self, deps: Dependencies, artifacts: Artifacts, access: Access) -> None:
        self._deps = deps
        self._artifacts = artifacts
        self._access = access

    async def explain(
        self, caller: Caller | Grant, backup_id: UUID, page: PageRequest
    ) -> Page[Verdict]:
        """Every successful run of the backup with its verdict under the backup's policy,
        newest first: what the job removes (``invalid_state`` without a policy)."""
        return await self.preview(caller, backup_id, None, page)

    async def preview(
        self,
        caller: Caller | Grant,
        backup_id: UUID,
        policy: RetentionPolicy | None,
        page: PageRequest,
    ) -> Page[Verdict]:
        """The verdicts ``policy`` would give the backup's runs now (the backup's own policy
        when None); nothing changes."""
        caller, workspace_id = await self._access.resolve(
            caller, READ_RETENTION, target_id=backup_id
        )
        if policy is not None:
            policy.ensure_lock_within_expiry()
        async with self._deps.uow() as uow:
            backup = lookups.visible_backup(
                caller, await lookups.backup(uow, workspace_id, backup_id)
            )
            chosen = policy or backup.retention
            if chosen is None:
                raise InvalidStateError("the backup has no retention policy yet")
            decided = await decide(uow, backup, chosen, self._deps.clock.now())
        return decided.page(page)

    async def run(self) -> RetentionReport:
        """Remove what expired; abort stale uploads."""
        now = self._deps.clock.now()
        counts = {
            "removed": 0,
            "kept_last": 0,
            "kept_locked": 0,
            "kept_held": 0,
            "failed": 0,
            "skipped": 0,
        }
        async with self._deps.uow() as uow:
            ruled = await uow.retention.ruled_backups()
        budget = BATCH
        for workspace_id, backup_id in ruled:
            if budget <= 0:
                break
            try:
                budget -= await self._apply_rules(workspace_id, backup_id, now, counts, budget)
            except StrongroomError:
                logger.exception("retention could not decide for backup %s", backup_id)
                counts["failed"] += 1
        by_rules = {backup_id for _, backup_id in ruled}
        async with self._deps.uow() as uow:
            expired = await uow.artifacts.expired(now, BATCH)
        for candidate in expired:
            if candidate.backup_id in by_rules:
                continue
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
        counts.pop("skipped")  # another removal came first
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

    async def _apply_rules(
        self,
        workspace_id: UUID,
        backup_id: UUID,
        now: datetime,
        counts: dict[str, int],
        budget: int,
    ) -> int:
        """Remove (at most ``budget`` of) the artifacts the keep rules give up in one
        backup, ``CHUNK`` per unit of work; how many were looked at."""
        async with self._deps.uow() as uow:
            backup = await uow.backups.get(workspace_id, backup_id)
            if backup is None or backup.retention is None:
                return 0
            doomed = list((await decide(uow, backup, backup.retention, now)).doomed)[:budget]
        for start in range(0, len(doomed), CHUNK):
            await self._remove_chunk(backup, doomed[start : start + CHUNK], now, counts)
        return len(doomed)

    async def _remove_chunk(
        self, backup: Backup, chunk: Sequence[StoredArtifact], now: datetime, counts: dict[str, int]
    ) -> None:
        """Remove artifacts the keep rules gave up, in one unit of work: each unless it
        changed since the decision (held, locked longer: a new reference) or went. The
        artifacts and their runs are locked together (one round trip), storage removes
        the objects in as few requests as it takes, and the records are written in one
        statement each, with the events at the ``COMMIT``. A failure before the ``COMMIT``
        leaves the records as they were: the next pass removes what is left."""
        async with self._deps.uow() as uow:
            found, runs = await uow.retention.lock_for_removal(
                backup.workspace_id, [a.id for a in chunk], {a.run_id for a in chunk}
            )
            current = {artifact.id: artifact for artifact in found}
            going: list[Artifact] = []
            for candidate in chunk:
                artifact = current.get(candidate.id)
                outcome = _unchanged(candidate, artifact, now)
                if outcome is None and artifact is not None:
                    going.append(artifact)
                else:
                    counts[outcome or "skipped"] += 1
            kept = await self._artifacts.remove_objects(going, backup) if going else {}
            counted = {run.id: run for run in runs}
            removed: list[Artifact] = []
            for artifact in going:
                refusal = kept.get(artifact.id)
                if isinstance(refusal, ArtifactLockedError):
                    counts["kept_locked"] += 1
                    continue
                if refusal is not None:
                    logger.error("retention could not remove artifact %s: %s", artifact.id, refusal)
                    counts["failed"] += 1
                    continue
                counts["removed"] += 1
                deleted = artifact.deleted()
                removed.append(deleted)
                run = counted.get(artifact.run_id)
                if run is not None:
                    counted[run.id] = run.without_artifact(artifact.size)
                removal = changed("artifact.delete", artifact, deleted)
                uow.collect(by_system(self._deps, artifact.workspace_id, removal))
            touched = {artifact.run_id for artifact in removed}
            await uow.retention.store_removals(
                removed, [run for run_id, run in counted.items() if run_id in touched]
            )
            await uow.commit()

    async def _remove(self, workspace_id: UUID, artifact_id: UUID) -> str:
        """Remove one expired artifact; the name of the count its outcome adds to."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            artifact = await uow.artifacts.get(workspace_id, artifact_id, for_update=True)
            if artifact is None or artifact.state is not ArtifactState.AVAILABLE:
                return "removed"  # another removal came first
            if artifact.is_locked(now):
                return "kept_locked"
            if artifact.held:
                return "kept_held"
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


def _unchanged(candidate: StoredArtifact, artifact: Artifact | None, now: datetime) -> str | None:
    """None when the artifact is as the decision saw it; else the count its outcome adds
    to (``skipped``: another removal came first)."""
    if artifact is None or artifact.state is not ArtifactState.AVAILABLE:
        return "skipped"
    if artifact.held:
        return "kept_held"
    if artifact.is_locked(now) or artifact.locked_until != candidate.locked_until:
        return "kept_locked"
    return None
