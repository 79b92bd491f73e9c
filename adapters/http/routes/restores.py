"""Restores: the service puts a cloud artifact back into a bucket or a database."""

from __future__ import annotations

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer
from strongroom.adapters.http.openapi import Routes
from strongroom.adapters.http.shapes import Restore, RestoreCreate
from strongroom.ports.driving.restores import CREATE_RESTORE, READ_RESTORE

routes = Routes("Runs and artifacts")


@routes.post(
    "/v1/artifacts/{aid}/restores",
    Restore,
    "The queued restore; follow `Location` to see how it goes.",
    CREATE_RESTORE,
    status=202,
    body=RestoreCreate,
    billing="config",
    errors={
        "not_found": "no such artifact in the caller's workspace",
        "validation_failed": (
            "the artifact is of a local or manual backup (restored by its client from "
            "`download-url`), the target type is not the backup's source type, the "
            "credentials are of another type's shape, or the target names an address the "
            "service does not connect to"
        ),
        "conflict": "the artifact is deleted",
        "invalid_state": "the artifact is not confirmed yet",
    },
    located="/v1/restores/{id}",
)
async def create_restore(ctx: ApiContext) -> Response:
    """Restore an artifact

    The service restores an available artifact of a cloud backup into a target of the
    backup's source type: an `s3` artifact's objects into a bucket, a `postgres` dump into
    an existing empty database. It runs in the background (`queued`, `running`, then
    `succeeded` or `failed`). Local and manual artifacts are restored client-side from
    `download-url`."""
    grant = await ctx.grant(CREATE_RESTORE, "aid")
    body = ctx.json(RestoreCreate)
    restore = await ctx.facade.restores.create(
        grant, ctx.path_id("aid"), body.target, body.credentials
    )
    return answer(restore, 202)


@routes.get("/v1/restores/{id}", Restore, "The restore.", READ_RESTORE)
async def get_restore(ctx: ApiContext) -> Response:
    """Read a restore

    One restore of the caller's workspace: its state and, once it failed, why."""
    grant = await ctx.grant(READ_RESTORE, "id")
    return answer(await ctx.facade.restores.get(grant, ctx.path_id("id")))
