"""Backups' health: `GET /v1/workspaces/{wid}/health` (contract 16)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import view_of
from strongroom.domain import freshness
from strongroom.domain.freshness import HealthStatus


@view_of(freshness.Failure)
@attrs.frozen
class Failure:
    """The newest failed run."""

    run_id: UUID
    error: str | None
    at: datetime
    """When it failed."""


@view_of(freshness.Health)
@attrs.frozen
class Health:
    """One backup's health."""

    backup_id: UUID
    status: HealthStatus
    """`late`: no success within `freshness.max_age` (or two schedule slots without it);
    `failing`: the newest finished run failed; `never`: no run succeeded yet; else `ok`."""
    last_success_at: datetime | None
    last_failure: Failure | None
    """The newest failed run, whether or not a success followed it."""
    age_seconds: int | None
    """Seconds since the newest success (null: none yet)."""
