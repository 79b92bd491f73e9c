"""Backups: create, list, read, change, pause, resume, delete.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, quota,
other conflicts).
"""

from __future__ import annotations

import attrs
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http import presenters
from strongroom.adapters.http.backup_patch import parse_backup_changes
from strongroom.adapters.http.context import ApiContext, endpoint, json_response, no_content
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import InvalidRequestError
from strongroom.ports.driving import IdempotencyKey
from strongroom.ports.driving.backups import (
    CREATE_BACKUP,
    DELETE_BACKUP,
    PAUSE_BACKUP,
    READ_BACKUPS,
    RESUME_BACKUP,
    UPDATE_BACKUP,
)


@attrs.frozen
class CreateBackupBody:
    """``POST /v1/workspaces/{wid}/backups``."""

    name: str
    kind: str


@attrs.frozen
class EmptyBody:
    """The optional body of an action: nothing, or ``{}``."""


def _kind(value: str) -> BackupKind:
    try:
        return BackupKind(value)
    except ValueError as error:
        allowed = ", ".join(kind.value for kind in BackupKind)
        raise InvalidRequestError(f"invalid value for kind: expected one of {allowed}") from error


@endpoint
async def create_backup(ctx: ApiContext) -> Response:
    """Reserve a new backup (state ``draft``) with a name and a kind (the credential is
    checked in the round trip that inserts)."""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")

    def parse() -> tuple[CreateBackupBody, BackupKind, IdempotencyKey[Backup] | None]:
        body = ctx.json(CreateBackupBody)
        return body, _kind(body.kind), ctx.idempotency(presenters.backup)

    body, kind, idempotency = await ctx.parsed_after_permission(
        parse, CREATE_BACKUP, workspace_id=workspace_id
    )
    backup = await ctx.facade.backups.create(
        bearer, workspace_id, body.name, kind, idempotency=idempotency
    )
    return json_response(presenters.backup(backup), 201)


@endpoint
async def list_backups(ctx: ApiContext) -> Response:
    """A workspace's backups, newest first (the credential is checked in the read)."""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")
    requested = await ctx.parsed_after_permission(ctx.page, READ_BACKUPS, workspace_id=workspace_id)
    page = await ctx.facade.backups.list_in(bearer, workspace_id, requested)
    return json_response(presenters.listing(page, presenters.backup))


@endpoint
async def get_backup(ctx: ApiContext) -> Response:
    """One backup of the caller's workspace (the credential is checked in the read)."""
    bearer = ctx.bearer()
    backup_id = await ctx.path_id_after_credential("bid")
    return json_response(presenters.backup(await ctx.facade.backups.get(bearer, backup_id)))


@endpoint
async def patch_backup(ctx: ApiContext) -> Response:
    """Change a backup; it becomes ``active`` in the PATCH that completes its configuration."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, UPDATE_BACKUP, target_id=backup_id)
    changes = parse_backup_changes(ctx.json_object())
    backup = await ctx.facade.backups.update(caller, backup_id, changes)
    return json_response(presenters.backup(backup))


@endpoint
async def pause_backup(ctx: ApiContext) -> Response:
    """Stop scheduling a backup (idempotent); it keeps its state."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, PAUSE_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return json_response(presenters.backup(await ctx.facade.backups.pause(caller, backup_id)))


@endpoint
async def resume_backup(ctx: ApiContext) -> Response:
    """Resume scheduling a backup (idempotent)."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    await ctx.facade.access.authorize(caller, RESUME_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return json_response(presenters.backup(await ctx.facade.backups.resume(caller, backup_id)))


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
