"""Backups: create, list, read, change, pause, resume, delete."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response

from strongroom.adapters.webkit.context import ApiContext, answer
from strongroom.adapters.webkit.conventions import if_match
from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.backups import Backup, BackupCreate, BackupUpdate
from strongroom.domain.backups import Backup as DomainBackup
from strongroom.ports.driven.repositories import Rendered
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.backups import (
    CREATE_BACKUP,
    DELETE_BACKUP,
    PAUSE_BACKUP,
    READ_BACKUPS,
    RESUME_BACKUP,
    UPDATE_BACKUP,
)

routes = Routes("Backups", billing="config")


def rendered(result: Rendered) -> Response:
    """A 200 of JSON the store rendered (the read models of the two reads), sent as is."""
    return Response(result.body, media_type="application/json")


@routes.create(
    "/v1/workspaces/{wid}/backups", Backup, "The new backup.", CREATE_BACKUP, body=BackupCreate
)
async def create_backup(ctx: ApiContext) -> Response:
    """Create a backup

    Reserves a backup in state `draft` with a name and a kind (immutable). The credential
    is checked in the round trip that inserts.

    Errors:
    - `invalid_request`: `kind` is not one of the kinds, a bad cron expression or time zone in
      `drill.schedule`
    - `validation_failed`: `encryption` on a cloud backup, or a recipient that is not an age
      X25519 recipient (1 to 10); `drill` on a local or manual backup, or a `drill.target`
      type other than `service`
    - `quota_exceeded`: `backups_per_workspace` is reached
    - `name_taken`: a backup of this name (case-insensitive) exists"""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")

    def parse() -> tuple[BackupCreate, IdempotencyKey | None]:
        return ctx.json(BackupCreate), ctx.idempotency()

    body, idempotency = await ctx.parsed_after_permission(
        parse, CREATE_BACKUP, workspace_id=workspace_id
    )
    backup = await ctx.facade.backups.create(
        bearer,
        workspace_id,
        body.name,
        body.kind,
        idempotency=idempotency,
        encryption=body.encryption,
        drill=body.drill,
    )
    return answer(backup, 201)


@routes.get("/v1/workspaces/{wid}/backups", Paged(Backup), "One page of backups.", READ_BACKUPS)
async def list_backups(ctx: ApiContext) -> Response:
    """List backups

    The workspace's backups, newest first (the credential is checked in the read)."""
    bearer = ctx.bearer()
    workspace_id = await ctx.path_id_after_credential("wid")
    requested = await ctx.parsed_after_permission(ctx.page, READ_BACKUPS, workspace_id=workspace_id)
    page = await ctx.facade.backups.list_rendered(bearer, workspace_id, requested)
    return rendered(page) if isinstance(page, Rendered) else answer(page)


@routes.get("/v1/backups/{bid}", Backup, "The backup.", READ_BACKUPS)
async def get_backup(ctx: ApiContext) -> Response:
    """Read a backup

    One backup of the caller's workspace (the credential is checked in the read)."""
    bearer = ctx.bearer()
    backup_id = await ctx.path_id_after_credential("bid")
    backup = await ctx.facade.backups.get_rendered(bearer, backup_id)
    return rendered(backup) if isinstance(backup, Rendered) else answer(backup)


@routes.patch(
    "/v1/backups/{bid}", Backup, "The whole updated backup.", UPDATE_BACKUP, body=BackupUpdate
)
async def update_backup(ctx: ApiContext, grant: Grant, bid: UUID) -> DomainBackup:
    """Change a backup

    Supplies configuration; the backup becomes `active` in the PATCH that completes its
    kind's configuration. There is no `kind` field.

    Errors:
    - `invalid_request`: `kind` or another unknown field, a bad cron expression or time zone, a
      duration with months or years, an `endpoint` that is not an http(s) URL, `credentials`
      or `destination_credentials` of no known shape (a missing or unknown key)
    - `validation_failed`: a kind rule: `worker_id` on a non-local backup or naming no worker of
      this workspace, `source` or `credentials` on a local or manual backup, `schedule` on a
      manual backup, a source type not offered for the kind, credentials of the other source
      type's shape, `encryption` on a cloud backup, a recipient that is not an age X25519
      recipient (1 to 10), `drill` on a local or manual backup, a `drill.target` type other
      than `service`
    - `invalid_state`: `encryption: null` on a snapshot backup (a snapshot backup stays one)
    - `name_taken`: another backup has this name (case-insensitive)
    - `retention_immutable`: a different retention policy is already set
    - `lock_exceeds_expiry`: `lock_for` is longer than `expire_after`"""
    changes = ctx.json(BackupUpdate).changes()  # credentials' shapes before If-Match
    precondition = if_match(ctx.request)
    return await ctx.facade.backups.update(grant, bid, changes, precondition=precondition)


@routes.action("/v1/backups/{bid}/pause", Backup, "The backup.", PAUSE_BACKUP, tagged=True)
async def pause_backup(facade: Strongroom, grant: Grant, bid: UUID) -> DomainBackup:
    """Pause a backup

    Stop scheduling the backup; it keeps its `state`. Idempotent; allowed on a draft."""
    return await facade.backups.pause(grant, bid)


@routes.action("/v1/backups/{bid}/resume", Backup, "The backup.", RESUME_BACKUP, tagged=True)
async def resume_backup(facade: Strongroom, grant: Grant, bid: UUID) -> DomainBackup:
    """Resume a backup

    Resume scheduling the backup. Idempotent."""
    return await facade.backups.resume(grant, bid)


@routes.delete("/v1/backups/{bid}", "Deleted.", DELETE_BACKUP)
async def delete_backup(facade: Strongroom, grant: Grant, bid: UUID) -> None:
    """Delete a backup

    Deletes the backup; refused while any of its artifacts is locked.

    Errors:
    - `artifact_locked`: one of its artifacts is inside its lock window"""
    await facade.backups.delete(grant, bid)
