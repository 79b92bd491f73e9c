"""Backups: create, list, read, change, pause, resume, delete.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, kind rules, billing, quota,
other conflicts).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.conventions import if_match, located, tagged
from strongroom.adapters.http.openapi import Paged, api
from strongroom.adapters.http.shapes import Backup, BackupCreate, BackupUpdate, EmptyBody
from strongroom.ports.driving import IdempotencyKey
from strongroom.ports.driving.backups import (
    CREATE_BACKUP,
    DELETE_BACKUP,
    PAUSE_BACKUP,
    READ_BACKUPS,
    RESUME_BACKUP,
    UPDATE_BACKUP,
)


@located("/v1/backups/{id}")
@endpoint
async def create_backup(ctx: ApiContext) -> Response:
    """Create a backup

    Reserves a backup in state `draft` with a name and a kind (immutable). The credential
    is checked in the round trip that inserts."""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")

    def parse() -> tuple[BackupCreate, IdempotencyKey | None]:
        return ctx.json(BackupCreate), ctx.idempotency()

    body, idempotency = await ctx.parsed_after_permission(
        parse, CREATE_BACKUP, workspace_id=workspace_id
    )
    backup = await ctx.facade.backups.create(
        bearer, workspace_id, body.name, body.kind, idempotency=idempotency
    )
    return answer(backup, 201)


@endpoint
async def list_backups(ctx: ApiContext) -> Response:
    """List backups

    The workspace's backups, newest first (the credential is checked in the read)."""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")
    requested = await ctx.parsed_after_permission(ctx.page, READ_BACKUPS, workspace_id=workspace_id)
    page = await ctx.facade.backups.list_in(bearer, workspace_id, requested)
    return answer(page)


@tagged
@endpoint
async def get_backup(ctx: ApiContext) -> Response:
    """Read a backup

    One backup of the caller's workspace (the credential is checked in the read)."""
    bearer = ctx.bearer()
    backup_id = await ctx.path_id_after_credential("bid")
    return answer(await ctx.facade.backups.get(bearer, backup_id))


@tagged
@endpoint
async def patch_backup(ctx: ApiContext) -> Response:
    """Change a backup

    Supplies configuration; the backup becomes `active` in the PATCH that completes its
    kind's configuration. There is no `kind` field."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    grant = await ctx.facade.access.authorize(caller, UPDATE_BACKUP, target_id=backup_id)
    changes = ctx.json(BackupUpdate).changes()
    precondition = if_match(ctx.request)
    backup = await ctx.facade.backups.update(grant, backup_id, changes, precondition=precondition)
    return answer(backup)


@tagged
@endpoint
async def pause_backup(ctx: ApiContext) -> Response:
    """Pause a backup

    Stop scheduling the backup; it keeps its `state`. Idempotent; allowed on a draft."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    grant = await ctx.facade.access.authorize(caller, PAUSE_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return answer(await ctx.facade.backups.pause(grant, backup_id))


@tagged
@endpoint
async def resume_backup(ctx: ApiContext) -> Response:
    """Resume a backup

    Resume scheduling the backup. Idempotent."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    grant = await ctx.facade.access.authorize(caller, RESUME_BACKUP, target_id=backup_id)
    ctx.json(EmptyBody, optional=True)
    return answer(await ctx.facade.backups.resume(grant, backup_id))


@endpoint
async def delete_backup(ctx: ApiContext) -> Response:
    """Delete a backup

    Deletes the backup; refused while any of its artifacts is locked."""
    caller = await ctx.caller()
    backup_id = ctx.path_id("bid")
    grant = await ctx.facade.access.authorize(caller, DELETE_BACKUP, target_id=backup_id)
    await ctx.facade.backups.delete(grant, backup_id)
    return no_content()


routes: list[BaseRoute] = [
    api(
        "POST",
        "/v1/workspaces/{wid}/backups",
        create_backup,
        "createBackup",
        "Backups",
        (201, Backup, "The new backup."),
        needs=CREATE_BACKUP,
        body=BackupCreate,
        idempotent=True,
        billing="config",
        errors={
            "invalid_request": "`kind` is not one of the kinds",
            "quota_exceeded": "`backups_per_workspace` is reached",
            "name_taken": "a backup of this name (case-insensitive) exists",
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/backups",
        list_backups,
        "listBackups",
        "Backups",
        (200, Paged(Backup), "One page of backups."),
        needs=READ_BACKUPS,
        paginated=True,
    ),
    api(
        "GET",
        "/v1/backups/{bid}",
        get_backup,
        "getBackup",
        "Backups",
        (200, Backup, "The backup."),
        needs=READ_BACKUPS,
        errors={"not_found": "no such backup in the caller's workspace"},
    ),
    api(
        "PATCH",
        "/v1/backups/{bid}",
        patch_backup,
        "updateBackup",
        "Backups",
        (200, Backup, "The whole updated backup."),
        needs=UPDATE_BACKUP,
        body=BackupUpdate,
        billing="config",
        errors={
            "invalid_request": (
                "`kind` or another unknown field, a bad cron expression or time zone, a duration "
                "with months or years, an `endpoint` that is not an http(s) URL, `credentials` or"
                " `destination_credentials` of no known shape (a missing or unknown key)"
            ),
            "not_found": "no such backup in the caller's workspace",
            "validation_failed": (
                "a kind rule: `worker_id` on a non-local backup or naming no worker of this "
                "workspace, `source` or `credentials` on a local or manual backup, `schedule` on "
                "a manual backup, a source type not offered for the kind, credentials of the "
                "other source type's shape"
            ),
            "name_taken": "another backup has this name (case-insensitive)",
            "retention_immutable": "a different retention policy is already set",
            "lock_exceeds_expiry": "`lock_for` is longer than `expire_after`",
        },
    ),
    api(
        "DELETE",
        "/v1/backups/{bid}",
        delete_backup,
        "deleteBackup",
        "Backups",
        (204, None, "Deleted."),
        needs=DELETE_BACKUP,
        billing="config",
        errors={
            "not_found": "no such backup in the caller's workspace",
            "artifact_locked": "one of its artifacts is inside its lock window",
        },
    ),
    api(
        "POST",
        "/v1/backups/{bid}/pause",
        pause_backup,
        "pauseBackup",
        "Backups",
        (200, Backup, "The backup."),
        needs=PAUSE_BACKUP,
        body=EmptyBody,
        body_required=False,
        billing="config",
        errors={
            "not_found": "no such backup in the caller's workspace",
        },
    ),
    api(
        "POST",
        "/v1/backups/{bid}/resume",
        resume_backup,
        "resumeBackup",
        "Backups",
        (200, Backup, "The backup."),
        needs=RESUME_BACKUP,
        body=EmptyBody,
        body_required=False,
        billing="config",
        errors={
            "not_found": "no such backup in the caller's workspace",
        },
    ),
]
