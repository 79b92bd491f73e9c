"""Runs: start a manual run, read a run, trigger a local or cloud backup.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, state).
"""

from __future__ import annotations

from uuid import UUID

import attrs
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http import presenters
from strongroom.adapters.http.context import ApiContext, endpoint, json_response
from strongroom.ports.driving.runs import READ_RUN, START_RUN, TRIGGER_BACKUP


@attrs.frozen
class StartRunBody:
    """``POST /v1/runs``."""

    backup_id: UUID


@endpoint
async def start_run(ctx: ApiContext) -> Response:
    """Start a run of a manual backup: 201 with the run in state ``running``."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, START_RUN)
    body = ctx.json(StartRunBody)
    run = await ctx.facade.runs.start(
        caller, body.backup_id, idempotency=ctx.idempotency(presenters.run)
    )
    return json_response(presenters.run(run), 201)


@endpoint
async def get_run(ctx: ApiContext) -> Response:
    """One run of the caller's workspace."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    await ctx.facade.access.authorize(caller, READ_RUN, target_id=run_id)
    return json_response(presenters.run(await ctx.facade.runs.get(caller, run_id)))


@endpoint
async def trigger_backup(ctx: ApiContext) -> Response:
    """Enqueue a run of a local or cloud backup: 202 with the ``queued`` run."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, TRIGGER_BACKUP, target_id=backup_id)
    ctx.empty_body()
    run = await ctx.facade.runs.trigger(
        caller, backup_id, idempotency=ctx.idempotency(presenters.run, 202)
    )
    return json_response(presenters.run(run), 202)


routes: list[BaseRoute] = [
    Route("/v1/runs", start_run, methods=["POST"]),
    Route("/v1/runs/{run_id}", get_run, methods=["GET"]),
    Route("/v1/backups/{bid}/trigger", trigger_backup, methods=["POST"]),
]
