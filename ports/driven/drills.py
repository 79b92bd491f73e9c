"""Restore drills (contract 16): where drills are stored, and the scratch targets the
service restores a backup's newest copy into to check it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from strongroom.domain.backups import Backup
from strongroom.domain.drills import Drill, TableFacts
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driven.storage import ObjectReader


class DrillRepository(Protocol):
    """Drills, and the manifests recorded with artifacts for them to check against."""

    async def add(self, drill: Drill) -> None:
        """Store a new drill; its backup must exist in its workspace."""
        ...

    async def get(
        self, workspace_id: UUID, drill_id: UUID, *, for_update: bool = False
    ) -> Drill | None:
        """A drill of this workspace (``for_update``: locked until the unit of work ends)."""
        ...

    async def update(self, drill: Drill) -> None:
        """Store a changed drill (state, run, timings, checks, error)."""
        ...

    async def next_queued(self) -> Drill | None:
        """The oldest queued drill of any workspace, locked (skipping those others hold)."""
        ...

    async def started_before(self, before: datetime, limit: int) -> list[Drill]:
        """Running drills of every workspace started before ``before``, oldest first."""
        ...

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, page: PageRequest
    ) -> Page[Drill]:
        """A backup's drills, newest first."""
        ...

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether a drill of the backup is ``queued`` or ``running``."""
        ...

    async def due_backups(self, now: datetime, limit: int) -> Sequence[Backup]:
        """Backups of every workspace whose drills are scheduled and whose
        ``next_drill_at`` is at or before ``now``, soonest first (at most ``limit``; the
        cost grows with the number due, not with the number of backups)."""
        ...

    async def advance_backup(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_drill_at: datetime
    ) -> bool:
        """Compare-and-set: the backup's ``next_drill_at`` becomes ``next_drill_at`` if it
        is ``expected``, locking the backup until the unit of work ends; whether it did
        (of rival units, exactly one does)."""
        ...

    async def record_manifest(
        self, workspace_id: UUID, artifact_id: UUID, manifest: Mapping[str, TableFacts]
    ) -> None:
        """Keep what a source recorded of an artifact's content when it was made."""
        ...

    async def manifest(self, workspace_id: UUID, artifact_id: UUID) -> dict[str, TableFacts] | None:
        """What was recorded of an artifact when it was made; None when nothing was."""
        ...


class DrillFailedError(Exception):
    """The scratch restore could not be done; the message is safe to show and record."""


@attrs.frozen
class Restored:
    """What a scratch restore found: the tables (``postgres``) or the objects' sha256 and
    those the archive's own manifest lists (``s3``), and how many bytes it restored."""

    bytes: int
    tables: Mapping[str, TableFacts] | None = None
    objects: Mapping[str, str] | None = None
    listed: Mapping[str, str] | None = None


class DrillTargets(Protocol):
    """Restores an artifact into a scratch target the service owns, reads back what it
    holds, and removes it; never touches the customer's systems."""

    async def restore(self, artifact: ObjectReader, source_type: str) -> Restored:
        """Read ``artifact`` (of a ``source_type`` backup) to its end into scratch;
        ``DrillFailedError`` when it cannot be restored at all."""
        ...
