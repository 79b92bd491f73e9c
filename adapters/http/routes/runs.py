"""Runs: start a manual run, read a run, trigger a local or cloud backup.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, state).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint
from strongroom.adapters.http.shapes import RunCreate
from strongroom.ports.driving.runs import READ_RUN, START_RUN, TRIGGER_BACKUP


@endpoint
async def start_run(ctx: ApiContext) -> Response:
    """Start a run of a manual backup: 201 with the run in state ``running``."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, START_RUN)
    body = ctx.json(RunCreate)
    run = await ctx.facade.runs.start(caller, body.backup_id, idempotency=ctx.idempotency())
    return answer(run, 201)


@endpoint
async def get_run(ctx: ApiContext) -> Response:
    """One run of the caller's workspace."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    await ctx.facade.access.authorize(caller, READ_RUN, target_id=run_id)
    return answer(await ctx.facade.runs.get(caller, run_id))


@endpoint
async def trigger_backup(ctx: ApiContext) -> Response:
    """Enqueue a run of a local or cloud backup: 202 with the ``queued`` run."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, TRIGGER_BACKUP, target_id=backup_id)
    ctx.empty_body()
    run = await ctx.facade.runs.trigger(caller, backup_id, idempotency=ctx.idempotency(status=202))
    return answer(run, 202)


routes: list[BaseRoute] = [
    Route("/v1/runs", start_run, methods=["POST"]),
    Route("/v1/runs/{run_id}", get_run, methods=["GET"]),
    Route("/v1/backups/{bid}/trigger", trigger_backup, methods=["POST"]),
]
