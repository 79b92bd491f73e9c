"""Runs: start a manual run, read, list and cancel runs, trigger a local or cloud backup."""

from __future__ import annotations

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer
from strongroom.adapters.http.openapi import Paged, Routes, parameter
from strongroom.adapters.http.shapes import Run, RunCreate
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.runs import RunState
from strongroom.ports.driving.runs import CANCEL_RUN, READ_RUN, START_RUN, TRIGGER_BACKUP

routes = Routes("Runs and artifacts")
backups = routes.tagged("Backups")


@routes.create("/v1/runs", Run, "The new run.", START_RUN, body=RunCreate, billing="runs")
async def start_run(ctx: ApiContext) -> Response:
    """Start a manual run

    A manual backup's client starts a run (state `running`, trigger `manual`); it then
    asks for upload URLs and confirms. Local and cloud backups get their runs from
    `trigger` or the scheduler.

    Errors:
    - `not_found`: no such backup in the caller's workspace
    - `validation_failed`: the backup is not manual
    - `invalid_state`: the backup is a draft or paused"""
    grant = await ctx.grant(START_RUN)
    body = ctx.json(RunCreate)
    run = await ctx.facade.runs.start(grant, body.backup_id, idempotency=ctx.idempotency())
    return answer(run, 201)


@routes.get("/v1/runs/{run_id}", Run, "The run.", READ_RUN)
async def get_run(ctx: ApiContext) -> Response:
    """Read a run

    One run of the caller's workspace."""
    grant = await ctx.grant(READ_RUN, "run_id")
    return answer(await ctx.facade.runs.get(grant, ctx.path_id("run_id")))


@routes.get(
    "/v1/backups/{bid}/runs",
    Paged(Run),
    "One page of runs.",
    READ_RUN,
    parameters=(
        parameter(
            "state",
            "query",
            "Only the runs in this state.",
            {"type": "string", "enum": [state.value for state in RunState]},
        ),
    ),
)
async def list_runs(ctx: ApiContext) -> Response:
    """List a backup's runs

    The backup's runs, newest first; only those in one state with `?state=`. Never
    refused for billing.

    Errors:
    - `invalid_request`: `state` is not a run state"""
    grant = await ctx.grant(READ_RUN, "bid")
    state = run_state(ctx.request.query_params.get("state"))
    page = await ctx.facade.runs.list_for_backup(grant, ctx.path_id("bid"), state, ctx.page())
    return answer(page)


def run_state(raw: str | None) -> RunState | None:
    """The ``?state=`` filter: a run state, or none (400 ``invalid_request`` otherwise)."""
    if raw is None:
        return None
    try:
        return RunState(raw)
    except ValueError as error:
        states = ", ".join(state.value for state in RunState)
        raise InvalidRequestError(f"state must be one of {states} (or left out)") from error


@routes.action("/v1/runs/{run_id}/cancel", Run, "The run, cancelled or asked to stop.", CANCEL_RUN)
async def cancel_run(ctx: ApiContext) -> Response:
    """Cancel a run

    A `queued` run becomes `cancelled` at once; a `running` one gets `cancel_requested:
    true` and becomes `cancelled` when its holder next heartbeats or fails, or its lease
    expires. Never refused for billing.

    Errors:
    - `invalid_state`: the run is finished (succeeded, failed or cancelled)"""
    grant = await ctx.grant(CANCEL_RUN, "run_id")
    ctx.empty_body()
    return answer(await ctx.facade.runs.cancel(grant, ctx.path_id("run_id")))


@backups.action(
    "/v1/backups/{bid}/trigger",
    Run,
    "The queued run.",
    TRIGGER_BACKUP,
    status=202,
    idempotent=True,
    billing="runs",
)
async def trigger_backup(ctx: ApiContext) -> Response:
    """Trigger a backup

    Enqueues a run of an active, unpaused local or cloud backup (state `queued`, trigger
    `api`); its worker or the service takes it.

    Errors:
    - `validation_failed`: the backup is manual (its client starts runs)
    - `invalid_state`: the backup is a draft or paused"""
    grant = await ctx.grant(TRIGGER_BACKUP, "bid")
    ctx.empty_body()
    run = await ctx.facade.runs.trigger(grant, ctx.path_id("bid"), idempotency=ctx.idempotency())
    return answer(run, 202)
