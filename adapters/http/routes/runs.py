"""Runs: start a manual run, read a run, trigger a local or cloud backup.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, state).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint
from strongroom.adapters.http.conventions import located, tagged
from strongroom.adapters.http.openapi import api
from strongroom.adapters.http.shapes import EmptyBody, Run, RunCreate
from strongroom.ports.driving.runs import READ_RUN, START_RUN, TRIGGER_BACKUP


@located("/v1/runs/{id}")
@endpoint
async def start_run(ctx: ApiContext) -> Response:
    """Start a manual run

    A manual backup's client starts a run (state `running`, trigger `manual`); it then
    asks for upload URLs and confirms. Local and cloud backups get their runs from
    `trigger` or the scheduler."""
    caller = await ctx.caller()
    grant = await ctx.facade.access.authorize(caller, START_RUN)
    body = ctx.json(RunCreate)
    run = await ctx.facade.runs.start(grant, body.backup_id, idempotency=ctx.idempotency())
    return answer(run, 201)


@tagged
@endpoint
async def get_run(ctx: ApiContext) -> Response:
    """Read a run

    One run of the caller's workspace."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    grant = await ctx.facade.access.authorize(caller, READ_RUN, target_id=run_id)
    return answer(await ctx.facade.runs.get(grant, run_id))


@located("/v1/runs/{id}")
@endpoint
async def trigger_backup(ctx: ApiContext) -> Response:
    """Trigger a backup

    Enqueues a run of an active, unpaused local or cloud backup (state `queued`, trigger
    `api`); its worker or the service takes it."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    grant = await ctx.facade.access.authorize(caller, TRIGGER_BACKUP, target_id=backup_id)
    ctx.empty_body()
    run = await ctx.facade.runs.trigger(grant, backup_id, idempotency=ctx.idempotency())
    return answer(run, 202)


routes: list[BaseRoute] = [
    api(
        "POST",
        "/v1/runs",
        start_run,
        "startRun",
        "Runs and artifacts",
        (201, Run, "The new run."),
        needs=START_RUN,
        body=RunCreate,
        idempotent=True,
        billing="runs",
        errors={
            "not_found": "no such backup in the caller's workspace",
            "validation_failed": "the backup is not manual",
            "invalid_state": "the backup is a draft or paused",
        },
    ),
    api(
        "GET",
        "/v1/runs/{run_id}",
        get_run,
        "getRun",
        "Runs and artifacts",
        (200, Run, "The run."),
        needs=READ_RUN,
        errors={"not_found": "no such run in the caller's workspace"},
    ),
    api(
        "POST",
        "/v1/backups/{bid}/trigger",
        trigger_backup,
        "triggerBackup",
        "Backups",
        (202, Run, "The queued run."),
        needs=TRIGGER_BACKUP,
        body=EmptyBody,
        body_required=False,
        idempotent=True,
        billing="runs",
        errors={
            "not_found": "no such backup in the caller's workspace",
            "validation_failed": "the backup is manual (its client starts runs)",
            "invalid_state": "the backup is a draft or paused",
        },
    ),
]
