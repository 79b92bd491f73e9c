"""Backups: create, list, read, change, pause, resume, delete.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, quota,
other conflicts).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.shapes import BackupCreate, BackupUpdate, EmptyBody
from strongroom.ports.driving.backups import (
    CREATE_BACKUP,
    DELETE_BACKUP,
    PAUSE_BACKUP,
    READ_BACKUPS,
    RESUME_BACKUP,
    UPDATE_BACKUP,
)


@endpoint
async def create_backup(ctx: ApiContext) -> Response:
    """Reserve a new backup (state ``draft``) with a name and a kind."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, CREATE_BACKUP, workspace_id=workspace_id)
    body = ctx.json(BackupCreate)
    backup = await ctx.facade.backups.create(
        caller, workspace_id, body.name, body.kind, idempotency=ctx.idempotency()
    )
    return answer(backup, 201)


@endpoint
async def list_backups(ctx: ApiContext) -> Response:
    """A workspace's backups, newest first."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, READ_BACKUPS, workspace_id=workspace_id)
    page = await ctx.facade.backups.list_in(caller, workspace_id, ctx.page())
    return answer(page)


@endpoint
async def get_backup(ctx: ApiContext) -> Response:
    """One backup of the caller's workspace."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, READ_BACKUPS, target_id=backup_id)
    return answer(await ctx.facade.backups.get(caller, backup_id))


@endpoint
async def patch_backup(ctx: ApiContext) -> Response:
    """Change a backup; it becomes ``active`` in the PATCH that completes its configuration."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, UPDATE_BACKUP, target_id=backup_id)
    changes = ctx.json(BackupUpdate).changes()
    backup = await ctx.facade.backups.update(caller, backup_id, changes)
    return answer(backup)


@endpoint
async def pause_backup(ctx: ApiContext) -> Response:
    """Stop scheduling a backup (idempotent); it keeps its state."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, PAUSE_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return answer(await ctx.facade.backups.pause(caller, backup_id))


@endpoint
async def resume_backup(ctx: ApiContext) -> Response:
    """Resume scheduling a backup (idempotent)."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, RESUME_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return answer(await ctx.facade.backups.resume(caller, backup_id))


@endpoint
async def delete_backup(ctx: ApiContext) -> Response:
    """Delete a backup."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, DELETE_BACKUP, target_id=backup_id)
    await ctx.facade.backups.delete(caller, backup_id)
    return no_content()


routes: list[BaseRoute] = [
    Route("/v1/workspaces/{wid}/backups", create_backup, methods=["POST"]),
    Route("/v1/workspaces/{wid}/backups", list_backups, methods=["GET"]),
    Route("/v1/backups/{bid}", get_backup, methods=["GET"]),
    Route("/v1/backups/{bid}", patch_backup, methods=["PATCH"]),
    Route("/v1/backups/{bid}", delete_backup, methods=["DELETE"]),
    Route("/v1/backups/{bid}/pause", pause_backup, methods=["POST"]),
    Route("/v1/backups/{bid}/resume", resume_backup, methods=["POST"]),
]
