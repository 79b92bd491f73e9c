"""Runs: start a manual run, read a run, trigger a local or cloud backup."""

from __future__ import annotations

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer
from strongroom.adapters.http.openapi import Routes
from strongroom.adapters.http.shapes import Run, RunCreate
from strongroom.ports.driving.runs import READ_RUN, START_RUN, TRIGGER_BACKUP

routes = Routes("Runs and artifacts")
backups = routes.tagged("Backups")


@routes.create(
    "/v1/runs",
    Run,
    "The new run.",
    START_RUN,
    body=RunCreate,
    billing="runs",
    errors={
        "not_found": "no such backup in the caller's workspace",
        "validation_failed": "the backup is not manual",
        "invalid_state": "the backup is a draft or paused",
    },
    located="/v1/runs/{id}",
)
async def start_run(ctx: ApiContext) -> Response:
    """Start a manual run

    A manual backup's client starts a run (state `running`, trigger `manual`); it then
    asks for upload URLs and confirms. Local and cloud backups get their runs from
    `trigger` or the scheduler."""
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


@backups.action(
    "/v1/backups/{bid}/trigger",
    Run,
    "The queued run.",
    TRIGGER_BACKUP,
    status=202,
    idempotent=True,
    billing="runs",
    errors={
        "validation_failed": "the backup is manual (its client starts runs)",
        "invalid_state": "the backup is a draft or paused",
    },
    located="/v1/runs/{id}",
)
async def trigger_backup(ctx: ApiContext) -> Response:
    """Trigger a backup

    Enqueues a run of an active, unpaused local or cloud backup (state `queued`, trigger
    `api`); its worker or the service takes it."""
    grant = await ctx.grant(TRIGGER_BACKUP, "bid")
    ctx.empty_body()
    run = await ctx.facade.runs.trigger(grant, ctx.path_id("bid"), idempotency=ctx.idempotency())
    return answer(run, 202)
