"""SQL backups, their runs, artifacts and restores; each look-up is scoped by the workspace
(the keys the schema's foreign keys tie together)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.signals import notice
from strongroom.adapters.sql import rows, run_rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Params, Row
from strongroom.adapters.sql.statements import SqlRepository, count_of, page_params, require
from strongroom.domain.artifacts import Artifact, ArtifactStorage
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup
from strongroom.domain.pagination import Page, PageRequest, page_of
from strongroom.domain.restores import Restore
from strongroom.domain.runs import Run, RunState

# What ``usage_below`` None becomes: a bound no count reaches.
_UNBOUNDED = 2**62


class SqlBackupRepository(SqlRepository):
    """Backups; names are unique per workspace case-insensitively (``backups_name_unique``)."""

    def _key(self, workspace_id: UUID, backup_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(backup_id)}

    async def add(self, backup: Backup) -> None:
        """Store a new backup; ``NameTakenError`` if its name is used."""
        await self._db.execute(Q.BACKUP_INSERT, rows.backup_params(backup, self._codec))

    async def add_counted(self, backup: Backup, event: AuditEvent, usage_below: int | None) -> bool:
        """The backup and its event while the workspace's count is below ``usage_below``:
        as the unit's first write, one statement committed on its own (PostgreSQL: one
        round trip) or one script in one hop (SQLite): ``backup_create_counted``; else
        in the unit's transaction, one pipeline."""
        insert = rows.backup_params(backup, self._codec)
        insert["usage_below"] = _UNBOUNDED if usage_below is None else usage_below
        audit = rows.audit_params(event, self._codec)
        if self._db.in_transaction:
            audit["backup_id"] = insert["id"]
            inserted, _ = await self._db.write_all(
                [
                    (Q.BACKUP_INSERT_COUNTED, insert, "count"),
                    (Q.AUDIT_INSERT_IF_BACKUP, audit, "count"),
                ]
            )
            return bool(inserted == 1)
        row = await self._db.write_alone(
            Q.BACKUP_CREATE_COUNTED, {**audit, "event_id": audit["id"], **insert}
        )
        if row is not None and int(row["created"]) == 1:
            return True
        # The count has reached the bound, or a retried statement found its earlier attempt
        # committed after its snapshot: a fresh look tells them apart (on lost races only).
        key = {"workspace_id": insert["workspace_id"], "id": insert["id"]}
        return await self._db.fetch_alone(Q.BACKUP_GET, key) is not None

    async def get(
        self, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
    ) -> Backup | None:
        """A backup of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.BACKUP_GET, self._key(workspace_id, backup_id), writes=for_update
        )
        return None if row is None else rows.backup_from_row(row, self._codec)

    async def update(self, backup: Backup) -> None:
        """Store a changed backup; ``NameTakenError`` if its new name is used."""
        changed = await self._db.execute(Q.BACKUP_UPDATE, rows.backup_params(backup, self._codec))
        require(changed == 1, "update of a missing backup")

    async def remove(self, workspace_id: UUID, backup_id: UUID) -> None:
        """Delete a backup (nothing happens when there is none)."""
        await self._db.execute(Q.BACKUP_DELETE, self._key(workspace_id, backup_id))

    async def list(
        self, workspace_id: UUID, page: PageRequest, worker_id: UUID | None = None
    ) -> Page[Backup]:
        """A workspace's backups, newest first (only a worker's, with ``worker_id``)."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters: list[Q] = []
        if worker_id is not None:
            params["worker_id"] = self._codec.uuid(worker_id)
            filters.append(Q.FILTER_BACKUP_WORKER)
        if after:
            filters.append(Q.FILTER_BACKUP_AFTER)
        found = await self._db.fetch_all(Q.BACKUP_LIST, params, filters=filters)
        return page_of([rows.backup_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many backups a workspace has."""
        return count_of(
            await self._db.fetch_one(
                Q.BACKUP_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )

    async def due(self, now: datetime, limit: int) -> Sequence[Backup]:
        """Scheduled backups whose slot has come, soonest first (index ``backups_due``)."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.BACKUP_DUE, params)
        return [rows.backup_from_row(row, self._codec) for row in found]

    async def advance_schedule(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_run_at: datetime
    ) -> bool:
        """Compare-and-set of ``next_run_at`` on the locked row (the lock serialises
        rivals), with the body it changes."""
        stored = await self.get(workspace_id, backup_id, for_update=True)
        if stored is None or stored.next_run_at != expected:
            return False
        params = self._key(workspace_id, backup_id)
        params["expected"] = self._codec.timestamp(expected)
        params["next_run_at"] = self._codec.timestamp(next_run_at)
        params["body"] = rows.backup_body(attrs.evolve(stored, next_run_at=next_run_at))
        return await self._db.execute(Q.BACKUP_ADVANCE_SCHEDULE, params) == 1


class SqlRunRepository(SqlRepository):
    """Runs; ``runs_backup_fkey`` ties each to a backup of its own workspace."""

    def _key(self, workspace_id: UUID, run_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(run_id)}

    async def add(self, run: Run) -> None:
        """Store a new run."""
        await self._db.execute(Q.RUN_INSERT, run_rows.run_params(run, self._codec))

    async def get(
        self, workspace_id: UUID, run_id: UUID, *, for_update: bool = False
    ) -> Run | None:
        """A run of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.RUN_GET, self._key(workspace_id, run_id), writes=for_update
        )
        return None if row is None else run_rows.run_from_row(row, self._codec)

    async def update(self, run: Run) -> None:
        """Store a changed run."""
        changed = await self._db.execute(Q.RUN_UPDATE, run_rows.run_params(run, self._codec))
        require(changed == 1, "update of a missing run")

    async def lease_expired(self, now: datetime, limit: int) -> list[Run]:
        """Running runs whose lease ran out, soonest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.RUN_LEASE_EXPIRED, params)
        return [run_rows.run_from_row(row, self._codec) for row in found]

    async def left_manual(self, announced_before: datetime, limit: int) -> list[Run]:
        """Running manual runs with pending artifacts all announced by ``announced_before``,
        oldest first."""
        params = {"announced_before": self._codec.timestamp(announced_before), "limit": limit}
        found = await self._db.fetch_all(Q.RUN_LEFT_MANUAL, params)
        return [run_rows.run_from_row(row, self._codec) for row in found]

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether the backup has a queued or running run."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        return count_of(await self._db.fetch_one(Q.RUN_OPEN_EXISTS, params)) > 0

    async def announce_queued(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """PostgreSQL: ``pg_notify`` in the write transaction (delivered at commit);
        SQLite: nothing to say."""
        params: Params = {"payload": notice(workspace_id, worker_id)}
        await self._db.fetch_one(Q.RUN_ANNOUNCE, params, writes=True)

    async def workers_with_queued(
        self, waiting: Collection[tuple[UUID, UUID]]
    ) -> set[tuple[UUID, UUID]]:
        """One statement over the queued runs, whatever the number of pairs."""
        wanted = set(waiting)
        if not wanted:
            return set()
        workers = self._codec.text_list(sorted({str(worker_id) for _, worker_id in wanted}))
        found = await self._db.fetch_all(Q.RUN_WORKERS_WITH_QUEUED, {"worker_ids": workers})
        read = self._codec.read_uuid
        return {(read(row["workspace_id"]), read(row["worker_id"])) for row in found} & wanted

    async def next_queued(self, workspace_id: UUID, worker_id: UUID) -> Run | None:
        """The oldest queued run of the worker's backups, locked (skipping locked ones)."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "worker_id": self._codec.uuid(worker_id),
        }
        row = await self._db.fetch_one(Q.RUN_NEXT_QUEUED, params, writes=True)
        return None if row is None else run_rows.run_from_row(row, self._codec)

    async def next_queued_cloud(self) -> Run | None:
        """The oldest queued run of a cloud backup, locked (skipping locked ones)."""
        row = await self._db.fetch_one(Q.RUN_NEXT_QUEUED_CLOUD, {}, writes=True)
        return None if row is None else run_rows.run_from_row(row, self._codec)

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, state: RunState | None, page: PageRequest
    ) -> Page[Run]:
        """A backup's runs, newest first (only those in ``state``, when given)."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        params["backup_id"] = self._codec.uuid(backup_id)
        filters: list[Q] = []
        if state is not None:
            params["state"] = state.value
            filters.append(Q.FILTER_RUN_STATE)
        if after:
            filters.append(Q.FILTER_RUN_AFTER)
        found = await self._db.fetch_all(Q.RUN_LIST_FOR_BACKUP, params, filters=filters)
        return page_of([run_rows.run_from_row(row, self._codec) for row in found], page)


class SqlRestoreRepository(SqlRepository):
    """Restores; ``restores.artifact_id`` ties each to an artifact (cascading)."""

    def _key(self, workspace_id: UUID, restore_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "id": self._codec.uuid(restore_id),
        }

    async def add(self, restore: Restore) -> None:
        """Store a new restore."""
        await self._db.execute(Q.RESTORE_INSERT, run_rows.restore_params(restore, self._codec))

    async def get(
        self, workspace_id: UUID, restore_id: UUID, *, for_update: bool = False
    ) -> Restore | None:
        """A restore of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.RESTORE_GET, self._key(workspace_id, restore_id), writes=for_update
        )
        return None if row is None else run_rows.restore_from_row(row, self._codec)

    async def update(self, restore: Restore) -> None:
        """Store a changed restore."""
        changed = await self._db.execute(
            Q.RESTORE_UPDATE, run_rows.restore_params(restore, self._codec)
        )
        require(changed == 1, "update of a missing restore")

    async def next_queued(self) -> Restore | None:
        """The oldest queued restore, locked (skipping those other runners hold)."""
        row = await self._db.fetch_one(Q.RESTORE_NEXT_QUEUED, {}, writes=True)
        return None if row is None else run_rows.restore_from_row(row, self._codec)

    async def lease_expired(self, now: datetime, limit: int) -> list[Restore]:
        """Running restores whose lease ran out, soonest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.RESTORE_LEASE_EXPIRED, params)
        return [run_rows.restore_from_row(row, self._codec) for row in found]


class SqlArtifactRepository(SqlRepository):
    """Artifacts; ``artifacts_run_fkey`` ties each to a run of its backup and workspace."""

    def _key(self, workspace_id: UUID, artifact_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "id": self._codec.uuid(artifact_id),
        }

    def _one(self, row: Row | None) -> Artifact | None:
        return None if row is None else run_rows.artifact_from_row(row, self._codec)

    async def add(self, artifact: Artifact) -> None:
        """Store a new artifact."""
        await self._db.execute(Q.ARTIFACT_INSERT, run_rows.artifact_params(artifact, self._codec))

    async def get(
        self, workspace_id: UUID, artifact_id: UUID, *, for_update: bool = False
    ) -> Artifact | None:
        """An artifact of this workspace (``for_update``: locked until the unit of work
        ends)."""
        return self._one(
            await self._db.fetch_one(
                Q.ARTIFACT_GET, self._key(workspace_id, artifact_id), writes=for_update
            )
        )

    async def update(self, artifact: Artifact) -> None:
        """Store a changed artifact."""
        changed = await self._db.execute(
            Q.ARTIFACT_UPDATE, run_rows.artifact_params(artifact, self._codec)
        )
        require(changed == 1, "update of a missing artifact")

    async def find_in_run(self, workspace_id: UUID, run_id: UUID, name: str) -> Artifact | None:
        """The artifact of this name in a run."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "run_id": self._codec.uuid(run_id),
            "name": name,
        }
        return self._one(await self._db.fetch_one(Q.ARTIFACT_FIND_IN_RUN, params))

    async def list_for_run(self, workspace_id: UUID, run_id: UUID) -> list[Artifact]:
        """Every artifact of a run, oldest first."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "run_id": self._codec.uuid(run_id),
        }
        found = await self._db.fetch_all(Q.ARTIFACT_LIST_FOR_RUN, params)
        return [run_rows.artifact_from_row(row, self._codec) for row in found]

    async def count_available(self, workspace_id: UUID, backup_id: UUID) -> int:
        """How many available artifacts a backup has."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        return count_of(await self._db.fetch_one(Q.ARTIFACT_COUNT_AVAILABLE, params))

    async def any_locked(
        self,
        workspace_id: UUID,
        now: datetime,
        *,
        backup_id: UUID | None = None,
        storage: ArtifactStorage | None = None,
    ) -> bool:
        """Whether an available artifact is locked at ``now``."""
        params: Params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "now": self._codec.timestamp(now),
        }
        filters = []
        if backup_id is not None:
            params["backup_id"] = self._codec.uuid(backup_id)
            filters.append(Q.FILTER_ARTIFACT_BACKUP)
        if storage is not None:
            params["storage"] = storage.value
            filters.append(Q.FILTER_ARTIFACT_STORAGE)
        return (
            count_of(await self._db.fetch_one(Q.ARTIFACT_ANY_LOCKED, params, filters=filters)) > 0
        )

    async def storage_bytes(self, workspace_id: UUID, *, with_pending: bool = False) -> int:
        """Total size of the available (and pending) artifacts in service storage."""
        params = {"workspace_id": self._codec.uuid(workspace_id)}
        filters = [Q.FILTER_ARTIFACT_PENDING] if with_pending else []
        return count_of(await self._db.fetch_one(Q.ARTIFACT_STORAGE_BYTES, params, filters=filters))

    async def expired(self, now: datetime, limit: int) -> list[Artifact]:
        """Available artifacts whose expiry has passed, oldest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.ARTIFACT_EXPIRED, params)
        return [run_rows.artifact_from_row(row, self._codec) for row in found]

    async def to_verify(
        self, limit: int, verified_before: datetime | None = None
    ) -> list[Artifact]:
        """Available artifacts whose verification is pending, then (``verified_before``)
        those never verified or last verified before it, least recently first."""
        params: Params = {"limit": limit}
        filters = []
        if verified_before is not None:
            params["verified_before"] = self._codec.timestamp(verified_before)
            filters.append(Q.FILTER_ARTIFACT_VERIFIED_BEFORE)
        found = await self._db.fetch_all(Q.ARTIFACT_TO_VERIFY, params, filters=filters)
        return [run_rows.artifact_from_row(row, self._codec) for row in found]

    async def list(self, workspace_id: UUID, deleted: bool, page: PageRequest) -> Page[Artifact]:
        """A workspace's artifacts, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_ARTIFACT_DELETED if deleted else Q.FILTER_ARTIFACT_NOT_DELETED]
        if after:
            filters.append(Q.FILTER_ARTIFACT_AFTER)
        found = await self._db.fetch_all(Q.ARTIFACT_LIST, params, filters=filters)
        return page_of([run_rows.artifact_from_row(row, self._codec) for row in found], page)

    def _ids(self, artifact_ids: Collection[UUID]) -> object:
        return self._codec.text_list([str(artifact_id) for artifact_id in artifact_ids])

    async def get_many(
        self, workspace_id: UUID, artifact_ids: Collection[UUID]
    ) -> dict[UUID, Artifact]:
        """The artifacts of this workspace among ``artifact_ids``, in one statement."""
        if not artifact_ids:
            return {}
        params = {"workspace_id": self._codec.uuid(workspace_id), "ids": self._ids(artifact_ids)}
        found = await self._db.fetch_all(Q.ARTIFACT_GET_MANY, params)
        artifacts = (run_rows.artifact_from_row(row, self._codec) for row in found)
        return {artifact.id: artifact for artifact in artifacts}

    async def lock_until(
        self, workspace_id: UUID, artifact_ids: Collection[UUID], until: datetime
    ) -> None:
        """Set these artifacts' ``locked_until``, in one statement."""
        if artifact_ids:
            params = {
                "workspace_id": self._codec.uuid(workspace_id),
                "ids": self._ids(artifact_ids),
                "locked_until": self._codec.timestamp(until),
            }
            await self._db.execute(Q.ARTIFACT_LOCK_UNTIL, params)

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Collection[UUID]
    ) -> None:
        """Record a run's references, in one statement."""
        if artifact_ids:
            params = {
                "workspace_id": self._codec.uuid(workspace_id),
                "run_id": self._codec.uuid(run_id),
                "ids": self._ids(artifact_ids),
            }
            await self._db.execute(Q.RUN_REFERENCES_ADD, params)

    async def references_of_backup(
        self, workspace_id: UUID, backup_id: UUID
    ) -> dict[UUID, frozenset[UUID]]:
        """For each referencing run of a backup, the artifacts it references."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        found: dict[UUID, set[UUID]] = {}
        for row in await self._db.fetch_all(Q.RUN_REFERENCES_OF_BACKUP, params):
            run_id = self._codec.read_uuid(row["run_id"])
            found.setdefault(run_id, set()).add(self._codec.read_uuid(row["artifact_id"]))
        return {run_id: frozenset(ids) for run_id, ids in found.items()}

    async def referrers(self, workspace_id: UUID, artifact_id: UUID) -> dict[UUID, int]:
        """The runs referencing an artifact, with their available artifact counts."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "artifact_id": self._codec.uuid(artifact_id),
        }
        found = await self._db.fetch_all(Q.RUN_REFERENCES_REFERRERS, params)
        return {self._codec.read_uuid(row["run_id"]): int(row["available"]) for row in found}
