"""Restore drills of a backup, run by the service (contract 16)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.drills import Drill as DomainDrill
from strongroom.domain.drills import DrillState


@view_of(DomainDrill)
@attrs.frozen
class Drill:
    """A drill: the backup's newest copy restored into a scratch target the service owns,
    and checked against what was recorded when the backup was made."""

    id: UUID
    backup_id: UUID
    run_id: UUID | None
    """The run whose artifact the drill restored; null until it starts."""
    state: DrillState
    """`queued` until the service takes it, `running`, then `succeeded` (every check
    passed) or `failed`."""
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    restore_seconds: float | None = attrs.field(metadata=meta(schema={"minimum": 0}))
    """How long the restore and its checks took; null until it finishes."""
    bytes: int | None = attrs.field(metadata=meta(schema={"minimum": 0}))
    """The bytes restored (a dump's size, or the objects' total); null until it finishes."""
    checks: Mapping[str, Any]
    """What was checked, in counts: `artifact_intact` (the stored bytes match their recorded
    size and sha256), then `tables`, `rows`, `tables_differing` (postgres) or `objects`,
    `objects_differing` (s3)."""
    error: str | None
    """What differs (a table's rows or checksum, an object's sha256: the first five, then
    how many more), or why the drill could not check; null unless `failed`."""
