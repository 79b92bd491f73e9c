"""Retention explained and previewed; legal holds on artifacts and runs (contract 15)."""

from __future__ import annotations

from uuid import UUID

from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.artifacts import Artifact
from strongroom.adapters.wire.retention import RetentionPreview, RetentionVerdict
from strongroom.adapters.wire.runs import Run
from strongroom.domain.artifacts import Artifact as DomainArtifact
from strongroom.domain.keep_rules import Verdict
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.runs import Run as DomainRun
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.holds import (
    HOLD_ARTIFACT,
    HOLD_RUN,
    RELEASE_ARTIFACT,
    RELEASE_RUN,
)
from strongroom.ports.driving.retention import READ_RETENTION

routes = Routes("Backups")
holds = routes.tagged("Runs and artifacts")

_HOLD_ERRORS = {
    "conflict": "the artifact is deleted",
    "invalid_state": "the artifact is not confirmed yet",
    "upstream_unavailable": "the database or object storage failed; nothing was recorded",
}
_RUN_HOLD_ERRORS = {
    "invalid_state": "the run has no available artifact",
    "upstream_unavailable": "the database or object storage failed; nothing was recorded",
}


@routes.get(
    "/v1/backups/{bid}/retention",
    Paged(RetentionVerdict),
    "One page of runs, newest first, each kept or expiring with its reasons.",
    READ_RETENTION,
)
async def explain_retention(
    facade: Strongroom, grant: Grant, bid: UUID, page: PageRequest
) -> Page[Verdict]:
    """Explain retention

    Every successful run of the backup that still has an available artifact, newest first,
    with the verdict of the backup's retention policy now: kept (with every reason) or
    expiring. The retention job removes exactly the expiring runs' artifacts (those no
    kept run references). Buckets are counted in the schedule's time zone (UTC without
    one).

    Errors:
    - `invalid_state`: the backup has no retention policy yet"""
    return await facade.retention.explain(grant, bid, page)


@routes.post(
    "/v1/backups/{bid}/retention/preview",
    Paged(RetentionVerdict),
    "One page of runs with the verdicts the proposed policy would give them now.",
    READ_RETENTION,
)
async def preview_retention(
    facade: Strongroom, grant: Grant, bid: UUID, page: PageRequest, body: RetentionPreview
) -> Page[Verdict]:
    """Preview a retention policy

    The answer of the explain endpoint for a proposed policy (`retention`, as a backup
    takes it, `keep` included), computed exactly as the job would; nothing changes.
    Paginated by `?limit=` and `?cursor=` like the explain endpoint.

    Errors:
    - `lock_exceeds_expiry`: `lock_for` is longer than `expire_after`"""
    return await facade.retention.preview(grant, bid, body.retention, page)


@holds.action(
    "/v1/artifacts/{aid}/hold",
    Artifact,
    "The artifact, `held`.",
    HOLD_ARTIFACT,
    errors=_HOLD_ERRORS,
)
async def hold_artifact(facade: Strongroom, grant: Grant, aid: UUID) -> DomainArtifact:
    """Place a legal hold on an artifact

    A held artifact is never deleted or expired, whatever its lock and retention say; the
    storage's own legal hold is set on its object too (S3 PutObjectLegalHold). Holding a
    held artifact changes nothing. Audited `artifact.hold`."""
    return await facade.holds.artifact(grant, aid, True)


@holds.route(
    "DELETE",
    "/v1/artifacts/{aid}/hold",
    Artifact,
    "The artifact, no longer `held`.",
    needs=RELEASE_ARTIFACT,
    status=200,
    errors=_HOLD_ERRORS,
)
async def release_artifact(facade: Strongroom, grant: Grant, aid: UUID) -> DomainArtifact:
    """Release an artifact's legal hold

    The artifact is again deleted and expired by its rules; its lock stays as it is (a
    release never shortens a lock). Audited `artifact.release`."""
    return await facade.holds.artifact(grant, aid, False)


@holds.action(
    "/v1/runs/{run_id}/hold",
    Run,
    "The run; each of its available artifacts `held`.",
    HOLD_RUN,
    errors=_RUN_HOLD_ERRORS,
)
async def hold_run(facade: Strongroom, grant: Grant, run_id: UUID) -> DomainRun:
    """Place a legal hold on a run

    Holds every available artifact of the run (a snapshot with all its objects), as
    `POST /v1/artifacts/{aid}/hold` does for one: each audited `artifact.hold`."""
    return await facade.holds.run(grant, run_id, True)


@holds.route(
    "DELETE",
    "/v1/runs/{run_id}/hold",
    Run,
    "The run; none of its artifacts `held`.",
    needs=RELEASE_RUN,
    status=200,
    errors=_RUN_HOLD_ERRORS,
)
async def release_run(facade: Strongroom, grant: Grant, run_id: UUID) -> DomainRun:
    """Release a run's legal hold

    Releases every available artifact of the run; locks stay as they are. Each audited
    `artifact.release`."""
    return await facade.holds.run(grant, run_id, False)
