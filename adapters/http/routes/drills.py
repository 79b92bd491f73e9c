"""Restore drills: the service proves a backup's newest copy restores and checks out."""

from __future__ import annotations

from uuid import UUID

from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.drills import Drill
from strongroom.domain.drills import Drill as DomainDrill
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.drills import CREATE_DRILL, READ_DRILL

routes = Routes("Backups")


@routes.post(
    "/v1/backups/{bid}/drills",
    Drill,
    "The queued drill; list the backup's drills to see how it goes.",
    CREATE_DRILL,
    status=202,
    errors={
        "not_found": "no such backup in the caller's workspace",
        "validation_failed": (
            "the backup is local or manual (its copies are restored client-side; the agent "
            "does not run drills yet), or it has no s3 or postgres source"
        ),
    },
)
async def create_drill(facade: Strongroom, grant: Grant, bid: UUID) -> DomainDrill:
    """Drill a backup

    The service restores the backup's newest available artifact into a scratch target it
    owns and checks it against what was recorded when the backup was made: a `postgres`
    dump into a scratch database (created and dropped on the service's drill server),
    each table's row count and checksum; an `s3` archive into a scratch directory, each
    object's sha256. It never writes to the customer's systems. It runs in the background
    (`queued`, `running`, then `succeeded` or `failed` naming what differs)."""
    return await facade.drills.create(grant, bid)


@routes.get("/v1/backups/{bid}/drills", Paged(Drill), "One page of drills.", READ_DRILL)
async def list_drills(
    facade: Strongroom, grant: Grant, bid: UUID, page: PageRequest
) -> Page[DomainDrill]:
    """List a backup's drills

    The backup's drills, newest first, each with its checks and how long it took.

    Errors:
    - `not_found`: no such backup in the caller's workspace"""
    return await facade.drills.list_for_backup(grant, bid, page)
