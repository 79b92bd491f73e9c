"""Restores: the service puts a cloud artifact back into a bucket or a database."""

from __future__ import annotations

from uuid import UUID

from strongroom.adapters.webkit.declare import Routes
from strongroom.adapters.wire.restores import Restore, RestoreCreate
from strongroom.domain.restores import Restore as DomainRestore
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.restores import CREATE_RESTORE, READ_RESTORE

routes = Routes("Runs and artifacts")


@routes.post(
    "/v1/artifacts/{aid}/restores",
    Restore,
    "The queued restore; follow `Location` to see how it goes.",
    CREATE_RESTORE,
    status=202,
    idempotent=True,
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
async def create_restore(
    facade: Strongroom,
    grant: Grant,
    aid: UUID,
    body: RestoreCreate,
    idempotency: IdempotencyKey | None,
) -> DomainRestore:
    """Restore an artifact

    The service restores an available artifact of a cloud backup into a target of the
    backup's source type: an `s3` artifact's objects into a bucket, a `postgres` dump into
    an existing empty database. It runs in the background (`queued`, `running`, then
    `succeeded` or `failed`). Local and manual artifacts are restored client-side from
    `download-url`. A client that retries after a lost answer sends the same
    `Idempotency-Key`: it gets the first restore back instead of starting a second one into
    the same target."""
    return await facade.restores.create(
        grant, aid, body.target, body.credentials, idempotency=idempotency
    )


@routes.get("/v1/restores/{id}", Restore, "The restore.", READ_RESTORE)
async def get_restore(facade: Strongroom, grant: Grant, id: UUID) -> DomainRestore:
    """Read a restore

    One restore of the caller's workspace: its state and, once it failed, why."""
    return await facade.restores.get(grant, id)
