"""Artifact verification: re-read an artifact's bytes from storage and compare them with
its sha256 (contracts 11 and 13).

A multipart upload on S3 becomes ``available`` at confirm with ``verification: pending``
(the store cannot tell the joined object's digest); the background verifier re-reads it
soon after, and with ``STRONGROOM_VERIFY_INTERVAL`` also a sample of older artifacts. The
object is read outside any transaction (it may take long); the result is recorded under
the artifact's row lock, audited as ``artifact.verify`` by ``system``. A mismatch is logged
as an error and counted in ``mismatches`` (the ``/metrics`` counter).
"""

from __future__ import annotations

import logging
from datetime import datetime

import attrs

from strongroom.domain.artifacts import Artifact, ArtifactState, Verification
from strongroom.domain.errors import StrongroomError
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_verification
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

# Artifacts looked at per run of the verifier.
BATCH = 100


@attrs.frozen
class VerificationReport:
    """What one run of the verifier found."""

    ok: int = 0
    mismatch: int = 0
    missing: int = 0
    failed: int = 0


class ArtifactVerification:
    """The verifier, run in the background inside ``serve``."""

    def __init__(self, deps: Dependencies, artifacts: Artifacts) -> None:
        self._deps = deps
        self._artifacts = artifacts
        self.mismatches = 0
        """Mismatches this process found since it started (for ``/metrics``)."""

    async def run(
        self, verified_before: datetime | None = None, limit: int = BATCH
    ) -> VerificationReport:
        """Verify the artifacts whose verification is pending and, with
        ``verified_before``, those not verified since then (least recently first)."""
        async with self._deps.uow() as uow:
            due = await uow.artifacts.to_verify(limit, verified_before)
        counts = {"ok": 0, "mismatch": 0, "missing": 0, "failed": 0}
        for artifact in due:
            try:
                found = await self.verify(artifact)
            except StrongroomError:
                logger.exception("could not verify artifact %s", artifact.id)
                counts["failed"] += 1
                continue
            if found is not None:
                counts[found.value] += 1
        report = VerificationReport(**counts)
        if due:
            logger.info("verification: %s", report)
        return report

    async def verify(self, artifact: Artifact) -> Verification | None:
        """Re-read one artifact and record what was found; None when it is no longer
        available (deleted meanwhile)."""
        async with self._deps.uow() as uow:
            backup = await uow.backups.get(artifact.workspace_id, artifact.backup_id)
        if backup is None:
            return None
        storage = self._artifacts.storage_for(artifact, backup)
        stored = await storage.read_digest(artifact.object_key)
        if stored is None:
            found = Verification.MISSING
        elif (stored.size, stored.sha256) == (artifact.size, artifact.sha256):
            found = Verification.OK
        else:
            found = Verification.MISMATCH
        async with self._deps.uow() as uow:
            current = await uow.artifacts.get(artifact.workspace_id, artifact.id, for_update=True)
            if current is None or current.state is not ArtifactState.AVAILABLE:
                return None
            after = current.verified(found, self._deps.clock.now())
            await uow.artifacts.update(after)
            await notify_verification(self._deps, uow, after)
            verified = current.recorded_verification(after)
            uow.collect(by_system(self._deps, artifact.workspace_id, verified))
            await uow.commit()
        if found is not Verification.OK:
            if found is Verification.MISMATCH:
                self.mismatches += 1
            logger.error(
                "artifact %s of workspace %s failed verification: %s",
                artifact.id,
                artifact.workspace_id,
                found.value,
            )
        return found
