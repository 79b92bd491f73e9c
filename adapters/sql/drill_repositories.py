"""SQL drills and the manifests recorded with artifacts (migration 0019)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import (
    Codec,
    Params,
    Row,
    opt_timestamp,
    opt_uuid,
    read_opt_timestamp,
    read_opt_uuid,
)
from strongroom.adapters.sql.statements import SqlRepository, count_of, page_params, require
from strongroom.domain.backups import Backup
from strongroom.domain.drills import Drill, DrillState, TableFacts
from strongroom.domain.pagination import Page, PageRequest, page_of


def drill_params(drill: Drill, codec: Codec) -> Params:
    """The columns of a drill."""
    return {
        "id": codec.uuid(drill.id),
        "workspace_id": codec.uuid(drill.workspace_id),
        "backup_id": codec.uuid(drill.backup_id),
        "run_id": opt_uuid(codec, drill.run_id),
        "state": drill.state.value,
        "created_at": codec.timestamp(drill.created_at),
        "started_at": opt_timestamp(codec, drill.started_at),
        "finished_at": opt_timestamp(codec, drill.finished_at),
        "restore_seconds": drill.restore_seconds,
        "bytes": drill.bytes,
        "checks": codec.json(dict(drill.checks)),
        "error": drill.error,
    }


def drill_from_row(row: Row, codec: Codec) -> Drill:
    """A drill from its columns."""
    return Drill(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        backup_id=codec.read_uuid(row["backup_id"]),
        run_id=read_opt_uuid(codec, row["run_id"]),
        state=DrillState(row["state"]),
        created_at=codec.read_timestamp(row["created_at"]),
        started_at=read_opt_timestamp(codec, row["started_at"]),
        finished_at=read_opt_timestamp(codec, row["finished_at"]),
        restore_seconds=row["restore_seconds"],
        bytes=row["bytes"],
        checks=codec.read_json(row["checks"]),
        error=row["error"],
    )


def tables_to_json(tables: Mapping[str, TableFacts]) -> dict[str, Any]:
    return {name: {"rows": f.rows, "checksum": f.checksum} for name, f in tables.items()}


def tables_from_json(value: Mapping[str, Any]) -> dict[str, TableFacts]:
    return {name: TableFacts(int(f["rows"]), str(f["checksum"])) for name, f in value.items()}


class SqlDrillRepository(SqlRepository):
    """Drills (``drills_backup_fkey`` ties each to its backup) and artifact manifests."""

    def _key(self, workspace_id: UUID, drill_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(drill_id)}

    async def add(self, drill: Drill) -> None:
        """Store a new drill."""
        await self._db.execute(Q.DRILL_INSERT, drill_params(drill, self._codec))

    async def get(
        self, workspace_id: UUID, drill_id: UUID, *, for_update: bool = False
    ) -> Drill | None:
        """A drill of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.DRILL_GET, self._key(workspace_id, drill_id), writes=for_update
        )
        return None if row is None else drill_from_row(row, self._codec)

    async def update(self, drill: Drill) -> None:
        """Store a changed drill."""
        changed = await self._db.execute(Q.DRILL_UPDATE, drill_params(drill, self._codec))
        require(changed == 1, "update of a missing drill")

    async def next_queued(self) -> Drill | None:
        """The oldest queued drill, locked (skipping those other runners hold)."""
        row = await self._db.fetch_one(Q.DRILL_NEXT_QUEUED, {}, writes=True)
        return None if row is None else drill_from_row(row, self._codec)

    async def started_before(self, before: datetime, limit: int) -> list[Drill]:
        """Running drills started before ``before``, oldest first."""
        params = {"before": self._codec.timestamp(before), "limit": limit}
        found = await self._db.fetch_all(Q.DRILL_STARTED_BEFORE, params)
        return [drill_from_row(row, self._codec) for row in found]

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, page: PageRequest
    ) -> Page[Drill]:
        """A backup's drills, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        params["backup_id"] = self._codec.uuid(backup_id)
        filters = [Q.FILTER_DRILL_AFTER] if after else []
        found = await self._db.fetch_all(Q.DRILL_LIST_FOR_BACKUP, params, filters=filters)
        return page_of([drill_from_row(row, self._codec) for row in found], page)

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether a drill of the backup is queued or running."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        return count_of(await self._db.fetch_one(Q.DRILL_OPEN_EXISTS, params)) > 0

    async def due_backups(self, now: datetime, limit: int) -> Sequence[Backup]:
        """Backups whose drill slot has come, soonest first (index ``backups_drill_due``)."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.BACKUP_DRILL_DUE, params)
        return [rows.backup_from_row(row, self._codec) for row in found]

    async def advance_backup(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_drill_at: datetime
    ) -> bool:
        """Compare-and-set of ``next_drill_at`` on the locked row (the lock serialises
        rivals); the body stays (the API does not show the next drill slot)."""
        key = {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(backup_id)}
        row = await self._db.fetch_one(Q.BACKUP_GET, key, writes=True)
        stored = None if row is None else rows.backup_from_row(row, self._codec)
        if stored is None or stored.next_drill_at != expected:
            return False
        params = {
            **key,
            "expected": self._codec.timestamp(expected),
            "next_drill_at": self._codec.timestamp(next_drill_at),
        }
        return await self._db.execute(Q.BACKUP_ADVANCE_DRILL, params) == 1

    async def record_manifest(
        self, workspace_id: UUID, artifact_id: UUID, manifest: Mapping[str, TableFacts]
    ) -> None:
        """Keep an artifact's manifest."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "artifact_id": self._codec.uuid(artifact_id),
            "tables": self._codec.json(tables_to_json(manifest)),
        }
        await self._db.execute(Q.ARTIFACT_MANIFEST_INSERT, params)

    async def manifest(self, workspace_id: UUID, artifact_id: UUID) -> dict[str, TableFacts] | None:
        """An artifact's manifest; None when none was recorded."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "artifact_id": self._codec.uuid(artifact_id),
        }
        row = await self._db.fetch_one(Q.ARTIFACT_MANIFEST_GET, params)
        return None if row is None else tables_from_json(self._codec.read_json(row["tables"]))
