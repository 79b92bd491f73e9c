"""In-memory drills and the manifests recorded with artifacts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, require
from strongroom.domain.backups import Backup
from strongroom.domain.drills import Drill, DrillState, TableFacts
from strongroom.domain.pagination import Page, PageRequest


class MemoryDrillRepository(MemoryRepository):
    """Drills; each needs its backup in its workspace."""

    table = "drills"

    async def add(self, drill: Drill) -> None:
        backup = self._tx.read("backups").get(drill.backup_id)
        require(
            backup is not None and backup.workspace_id == drill.workspace_id,
            "drill's backup exists in its workspace",
        )
        self._insert(drill.id, drill)

    async def get(
        self, workspace_id: UUID, drill_id: UUID, *, for_update: bool = False
    ) -> Drill | None:
        found: Drill | None = self._tx.read(self.table).get(drill_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def update(self, drill: Drill) -> None:
        stored = await self.get(drill.workspace_id, drill.id)
        require(
            stored is not None and stored.backup_id == drill.backup_id, "update of a missing drill"
        )
        self._replace(drill.id, drill)

    async def next_queued(self) -> Drill | None:
        queued = [d for d in self._tx.read(self.table).values() if d.state is DrillState.QUEUED]
        return min(queued, key=lambda d: (d.created_at, d.id), default=None)

    async def started_before(self, before: datetime, limit: int) -> list[Drill]:
        found = [
            d
            for d in self._tx.read(self.table).values()
            if d.state is DrillState.RUNNING and d.started_at is not None and d.started_at < before
        ]
        found.sort(key=lambda d: (d.started_at, d.id))
        return found[:limit]

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, page: PageRequest
    ) -> Page[Drill]:
        rows = self._tx.read(self.table).values()
        mine = [d for d in rows if d.workspace_id == workspace_id and d.backup_id == backup_id]
        return keyset_page(mine, page)

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        return any(
            d.workspace_id == workspace_id
            and d.backup_id == backup_id
            and d.state in (DrillState.QUEUED, DrillState.RUNNING)
            for d in self._tx.read(self.table).values()
        )

    async def due_backups(self, now: datetime, limit: int) -> Sequence[Backup]:
        found = [
            b
            for b in self._tx.read("backups").values()
            if b.next_drill_at is not None
            and b.next_drill_at <= now
            and b.drill_schedule is not None
        ]
        found.sort(key=lambda b: (b.next_drill_at, b.id))
        return found[:limit]

    async def advance_backup(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_drill_at: datetime
    ) -> bool:
        stored: Backup | None = self._tx.read("backups").get(backup_id)
        if stored is None or stored.workspace_id != workspace_id:
            return False
        if stored.next_drill_at != expected:
            return False
        self._tx.write("backups")[backup_id] = evolve(stored, next_drill_at=next_drill_at)
        return True

    async def record_manifest(
        self, workspace_id: UUID, artifact_id: UUID, manifest: Mapping[str, TableFacts]
    ) -> None:
        artifact = self._tx.read("artifacts").get(artifact_id)
        require(
            artifact is not None and artifact.workspace_id == workspace_id,
            "manifest's artifact exists in its workspace",
        )
        self._tx.write("artifact_manifests")[(workspace_id, artifact_id)] = dict(manifest)

    async def manifest(self, workspace_id: UUID, artifact_id: UUID) -> dict[str, TableFacts] | None:
        found = self._tx.read("artifact_manifests").get((workspace_id, artifact_id))
        if found is None or artifact_id not in self._tx.read("artifacts"):
            return None
        return dict(found)
