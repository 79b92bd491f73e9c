"""The worker protocol: claim a queued run, heartbeat it, report its failure."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response

from strongroom.adapters.webkit.context import ApiContext, answer, no_content
from strongroom.adapters.webkit.declare import Routes
from strongroom.adapters.wire.claims import Claim, ClaimRequest
from strongroom.adapters.wire.runs import FailRequest, Heartbeat, HeartbeatRequest, Run
from strongroom.domain.runs import Progress
from strongroom.domain.runs import Run as DomainRun
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.claims import CLAIM_RUN, FAIL_RUN, HEARTBEAT_RUN

routes = Routes("Runs and artifacts")


@routes.post(
    "/v1/claims",
    Claim,
    "The claimed run, its backup and its lease (204 with no body when none is queued).",
    CLAIM_RUN,
    status=201,
    located="/v1/runs/{run[id]}",
    body=ClaimRequest,
    body_required=False,
    extra_responses={"204": {"description": "No run is queued for the worker (no body)."}},
)
async def claim_run(ctx: ApiContext) -> Response:
    """Claim a run

    A worker takes the oldest `queued` run of a backup assigned to it: the run becomes
    `running` with the worker, `started_at` and a 60 s lease its heartbeats extend. With
    `wait_seconds`, waits up to that long for one; 204 with no body when none is queued.
    Exactly one claimer gets a run. Never refused for billing.

    Errors:
    - `forbidden`: a person or an API key called it (only workers claim runs)
    - `invalid_request`: `wait_seconds` is not 0 to 30"""
    claimed = await ctx.facade.claims.claim(
        ctx.bearer(),
        lambda: ctx.json(ClaimRequest, optional=True).wait_seconds,
        ctx.still_connected,
    )
    return no_content() if claimed is None else answer(claimed, 201)


@routes.post(
    "/v1/runs/{run_id}/heartbeat",
    Heartbeat,
    "The extended lease, and whether the run was cancelled.",
    HEARTBEAT_RUN,
    body_required=False,
)
async def heartbeat_run(
    facade: Strongroom, grant: Grant, run_id: UUID, body: HeartbeatRequest
) -> DomainRun:
    """Heartbeat a run

    The worker holding the run extends its lease by 60 s and may report its progress. A
    run whose cancel was requested becomes `cancelled`: the answer says
    `cancel_requested: true` and the worker stops. Any other caller gets 404.

    Errors:
    - `not_found`: no such run held by the calling worker
    - `invalid_state`: the run is finished (succeeded, failed or cancelled)
    - `invalid_request`: `progress.bytes_done` is negative or beyond `bytes_total`"""
    report = body.progress
    progress = (
        None if report is None else Progress(report.bytes_done, report.bytes_total, report.message)
    )
    return await facade.claims.heartbeat(grant, run_id, progress)


@routes.post(
    "/v1/runs/{run_id}/fail",
    Run,
    "The failed run (cancelled when its cancel was requested).",
    FAIL_RUN,
)
async def fail_run(facade: Strongroom, grant: Grant, run_id: UUID, body: FailRequest) -> DomainRun:
    """Fail a run

    The worker holding the run, or the client of a manual run, reports that it failed:
    the run becomes `failed` with the error and its pending artifacts are aborted.

    Errors:
    - `not_found`: no such run held by the calling worker (or manual run of the caller)
    - `invalid_state`: the run is finished (succeeded, failed or cancelled)
    - `invalid_request`: `error` is not 1 to 2000 characters"""
    return await facade.claims.fail(grant, run_id, body.error)
