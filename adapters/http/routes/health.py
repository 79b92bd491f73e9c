"""Backups' health (contract 16)."""

from __future__ import annotations

from uuid import UUID

from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.health import Health
from strongroom.domain.freshness import Health as DomainHealth
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.health import READ_HEALTH

routes = Routes("Backups")


@routes.get(
    "/v1/workspaces/{wid}/health", Paged(Health), "One page of backups' health.", READ_HEALTH
)
async def list_health(
    facade: Strongroom, grant: Grant, wid: UUID, page: PageRequest
) -> Page[DomainHealth]:
    """Backups' health

    Every backup of the workspace with its health, late and failing first (then newest
    backup first). A backup is `late` when its newest successful run is older than its
    `freshness.max_age`, or than two schedule slots without one; the service notices this
    itself, whether or not any worker or client is alive. Needs `backups:read`."""
    return await facade.health.list_in(grant, wid, page)
