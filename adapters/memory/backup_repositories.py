"""In-memory backups, their runs, artifacts and restores; they refuse what the SQL
schema refuses (duplicate names, dangling references, updates of missing rows)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.record_repositories import MemoryAuditRepository
from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, require
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage, Verification
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import NameTakenError
from strongroom.domain.names import name_key
from strongroom.domain.pagination import Page, PageRequest, sort_key
from strongroom.domain.restores import Restore, RestoreState
from strongroom.domain.runs import Run, RunState, RunTrigger


class MemoryBackupRepository(MemoryRepository):
    """Backups; names are unique per workspace, case-insensitively."""

    table = "backups"

    def _ensure_name_free(self, backup: Backup) -> None:
        for other in self._tx.read(self.table).values():
            if (
                other.workspace_id == backup.workspace_id
                and other.id != backup.id
                and name_key(other.name) == name_key(backup.name)
            ):
                raise NameTakenError(f"a backup named {backup.name!r} already exists")

    async def add(self, backup: Backup) -> None:
        require(backup.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._ensure_name_free(backup)
        self._insert(backup.id, backup)

    async def add_counted(self, backup: Backup, event: AuditEvent, usage_below: int | None) -> bool:
        if backup.id in self._tx.read(self.table):
            return True  # a repeat of a create that was written
        if backup.workspace_id not in self._tx.read("workspaces"):
            return False
        if usage_below is not None and await self.count(backup.workspace_id) >= usage_below:
            return False
        await self.add(backup)
        await MemoryAuditRepository(self._tx).add(event)
        return True

    async def get(
        self, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
    ) -> Backup | None:
        backup: Backup | None = self._tx.read(self.table).get(backup_id)
        return backup if backup is not None and backup.workspace_id == workspace_id else None

    async def update(self, backup: Backup) -> None:
        stored = await self.get(backup.workspace_id, backup.id)
        require(stored is not None, "update of a missing backup")
        self._ensure_name_free(backup)
        self._tx.write(self.table)[backup.id] = backup

    async def remove(self, workspace_id: UUID, backup_id: UUID) -> None:
        if await self.get(workspace_id, backup_id) is not None:
            del self._tx.write(self.table)[backup_id]
            # The backup's runs go with it (ON DELETE CASCADE).
            for table in ("runs", "artifacts", "drills"):
                rows = self._tx.write(table)
                for key in [key for key, row in rows.items() if row.backup_id == backup_id]:
                    del rows[key]
            # And the artifacts' restores (ON DELETE CASCADE).
            artifacts = self._tx.read("artifacts")
            restores = self._tx.write("restores")
            for key in [key for key, row in restores.items() if row.artifact_id not in artifacts]:
                del restores[key]

    async def list(
        self, workspace_id: UUID, page: PageRequest, worker_id: UUID | None = None
    ) -> Page[Backup]:
        rows = self._tx.read(self.table).values()
        mine = (b for b in rows if b.workspace_id == workspace_id)
        return keyset_page((b for b in mine if worker_id in (None, b.worker_id)), page)

    async def count(self, workspace_id: UUID) -> int:
        return sum(1 for b in self._tx.read(self.table).values() if b.workspace_id == workspace_id)

    async def due(self, now: datetime, limit: int) -> Sequence[Backup]:
        found = [
            b
            for b in self._tx.read(self.table).values()
            if b.next_run_at is not None and b.next_run_at <= now and b.is_scheduled
        ]
        found.sort(key=lambda b: (b.next_run_at, b.id))
        return found[:limit]

    async def advance_schedule(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_run_at: datetime
    ) -> bool:
        stored = await self.get(workspace_id, backup_id)
        if stored is None or stored.next_run_at != expected:
            return False
        self._tx.write(self.table)[backup_id] = evolve(stored, next_run_at=next_run_at)
        return True


class MemoryRunRepository(MemoryRepository):
    """Runs; each needs its backup in the same workspace."""

    table = "runs"

    async def add(self, run: Run) -> None:
        backup = self._tx.read("backups").get(run.backup_id)
        require(
            backup is not None and backup.workspace_id == run.workspace_id,
            "run's backup exists in its workspace",
        )
        self._insert(run.id, run)

    async def get(
        self, workspace_id: UUID, run_id: UUID, *, for_update: bool = False
    ) -> Run | None:
        run: Run | None = self._tx.read(self.table).get(run_id)
        return run if run is not None and run.workspace_id == workspace_id else None

    async def update(self, run: Run) -> None:
        stored = await self.get(run.workspace_id, run.id)
        require(stored is not None and stored.backup_id == run.backup_id, "update of a missing run")
        assert stored is not None
        # Identity and origin are fixed, as the SQL update leaves them out.
        self._replace(run.id, evolve(run, trigger=stored.trigger, created_at=stored.created_at))

    async def lease_expired(self, now: datetime, limit: int) -> list[Run]:
        found = [
            run
            for run in self._tx.read(self.table).values()
            if run.state is RunState.RUNNING and run.lease_expired(now)
        ]
        found.sort(key=lambda run: (run.lease_expires_at, run.id))
        return found[:limit]

    async def left_manual(self, announced_before: datetime, limit: int) -> list[Run]:
        newest: dict[UUID, datetime] = {}
        for artifact in self._tx.read("artifacts").values():
            if artifact.state is ArtifactState.PENDING:
                seen = newest.get(artifact.run_id, artifact.created_at)
                newest[artifact.run_id] = max(seen, artifact.created_at)
        found = [
            run
            for run in self._tx.read(self.table).values()
            if run.state is RunState.RUNNING
            and run.trigger is RunTrigger.MANUAL
            and run.id in newest
            and newest[run.id] <= announced_before
        ]
        found.sort(key=lambda run: (run.created_at, run.id))
        return found[:limit]

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        return any(
            run.workspace_id == workspace_id
            and run.backup_id == backup_id
            and run.state in (RunState.QUEUED, RunState.RUNNING)
            for run in self._tx.read(self.table).values()
        )

    async def announce_queued(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """Nothing: one process holds the store; its ``RunSignals`` wake its claims."""

    async def workers_with_queued(
        self, waiting: Collection[tuple[UUID, UUID]]
    ) -> set[tuple[UUID, UUID]]:
        backups: Mapping[UUID, Backup] = self._tx.read(MemoryBackupRepository.table)
        wanted = set(waiting)
        found: set[tuple[UUID, UUID]] = set()
        for run in self._tx.read(self.table).values():
            owner = backups.get(run.backup_id)
            if run.state is RunState.QUEUED and owner is not None and owner.worker_id:
                found.add((run.workspace_id, owner.worker_id))
        return found & wanted

    async def next_queued(self, workspace_id: UUID, worker_id: UUID) -> Run | None:
        backups: Mapping[UUID, Backup] = self._tx.read(MemoryBackupRepository.table)
        queued = [
            run
            for run in self._tx.read(self.table).values()
            if run.workspace_id == workspace_id
            and run.state is RunState.QUEUED
            and (owner := backups.get(run.backup_id)) is not None
            and owner.worker_id == worker_id
        ]
        return min(queued, key=lambda run: (run.created_at, run.id), default=None)

    async def next_queued_cloud(self) -> Run | None:
        backups: Mapping[UUID, Backup] = self._tx.read(MemoryBackupRepository.table)
        queued = [
            run
            for run in self._tx.read(self.table).values()
            if run.state is RunState.QUEUED
            and (owner := backups.get(run.backup_id)) is not None
            and owner.kind is BackupKind.CLOUD
        ]
        return min(queued, key=lambda run: (run.created_at, run.id), default=None)

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, state: RunState | None, page: PageRequest
    ) -> Page[Run]:
        return keyset_page(
            (
                run
                for run in self._tx.read(self.table).values()
                if run.workspace_id == workspace_id
                and run.backup_id == backup_id
                and (state is None or run.state is state)
            ),
            page,
        )


class MemoryRestoreRepository(MemoryRepository):
    """Restores; each needs its artifact in the same workspace."""

    table = "restores"

    async def add(self, restore: Restore) -> None:
        artifact = self._tx.read("artifacts").get(restore.artifact_id)
        require(
            artifact is not None and artifact.workspace_id == restore.workspace_id,
            "restore's artifact exists in its workspace",
        )
        self._insert(restore.id, restore)

    async def get(
        self, workspace_id: UUID, restore_id: UUID, *, for_update: bool = False
    ) -> Restore | None:
        found: Restore | None = self._tx.read(self.table).get(restore_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def update(self, restore: Restore) -> None:
        stored = await self.get(restore.workspace_id, restore.id)
        require(
            stored is not None and stored.artifact_id == restore.artifact_id,
            "update of a missing restore",
        )
        assert stored is not None
        # Identity, target and creation time are fixed, as the SQL update leaves them out.
        self._replace(
            restore.id, evolve(restore, target=stored.target, created_at=stored.created_at)
        )

    async def next_queued(self) -> Restore | None:
        queued = [r for r in self._tx.read(self.table).values() if r.state is RestoreState.QUEUED]
        return min(queued, key=lambda r: (r.created_at, r.id), default=None)

    async def lease_expired(self, now: datetime, limit: int) -> list[Restore]:
        found = [r for r in self._tx.read(self.table).values() if r.lease_expired(now)]
        found.sort(key=lambda r: (r.lease_expires_at, r.id))
        return found[:limit]


class MemoryArtifactRepository(MemoryRepository):
    """Artifacts; each needs a run of its backup in its workspace, names unique per run."""

    table = "artifacts"

    def _rows(self, workspace_id: UUID) -> list[Artifact]:
        return [a for a in self._tx.read(self.table).values() if a.workspace_id == workspace_id]

    async def add(self, artifact: Artifact) -> None:
        run = self._tx.read("runs").get(artifact.run_id)
        require(
            run is not None
            and run.workspace_id == artifact.workspace_id
            and run.backup_id == artifact.backup_id,
            "artifact's run exists in its backup and workspace",
        )
        require(
            all(
                other.run_id != artifact.run_id or other.name != artifact.name
                for other in self._tx.read(self.table).values()
            ),
            "artifact name unused in its run",
        )
        self._insert(artifact.id, artifact)

    async def get(
        self, workspace_id: UUID, artifact_id: UUID, *, for_update: bool = False
    ) -> Artifact | None:
        found: Artifact | None = self._tx.read(self.table).get(artifact_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def update(self, artifact: Artifact) -> None:
        stored = await self.get(artifact.workspace_id, artifact.id)
        require(
            stored is not None and stored.run_id == artifact.run_id, "update of a missing artifact"
        )
        assert stored is not None
        # Only state, upload, expiry, lock, verification and hold change, as the SQL update says,
        # and the size and sha256 of a pending artifact (one the service streamed itself).
        written = stored.state is ArtifactState.PENDING
        self._replace(
            artifact.id,
            evolve(
                stored,
                size=artifact.size if written else stored.size,
                sha256=artifact.sha256 if written else stored.sha256,
                state=artifact.state,
                upload_id=artifact.upload_id,
                expires_at=artifact.expires_at,
                locked_until=artifact.locked_until,
                verification=artifact.verification,
                verified_at=artifact.verified_at,
                held=artifact.held,
            ),
        )

    async def find_in_run(self, workspace_id: UUID, run_id: UUID, name: str) -> Artifact | None:
        for artifact in self._rows(workspace_id):
            if artifact.run_id == run_id and artifact.name == name:
                return artifact
        return None

    async def list_for_run(self, workspace_id: UUID, run_id: UUID) -> list[Artifact]:
        found = [a for a in self._rows(workspace_id) if a.run_id == run_id]
        return sorted(found, key=sort_key)

    async def count_available(self, workspace_id: UUID, backup_id: UUID) -> int:
        return sum(
            1
            for a in self._rows(workspace_id)
            if a.backup_id == backup_id and a.state is ArtifactState.AVAILABLE
        )

    async def any_locked(
        self,
        workspace_id: UUID,
        now: datetime,
        *,
        backup_id: UUID | None = None,
        storage: ArtifactStorage | None = None,
    ) -> bool:
        return any(
            a.is_locked(now)
            and (backup_id is None or a.backup_id == backup_id)
            and (storage is None or a.storage is storage)
            for a in self._rows(workspace_id)
        )

    async def storage_bytes(self, workspace_id: UUID, *, with_pending: bool = False) -> int:
        states = (
            {ArtifactState.AVAILABLE, ArtifactState.PENDING}
            if with_pending
            else {ArtifactState.AVAILABLE}
        )
        return sum(
            a.size
            for a in self._rows(workspace_id)
            if a.storage is ArtifactStorage.SERVICE and a.state in states
        )

    async def expired(self, now: datetime, limit: int) -> list[Artifact]:
        backups = self._tx.read("backups")

        def ruled(a: Artifact) -> bool:
            backup = backups.get(a.backup_id)
            return backup is not None and backup.decided_run_by_run

        found = [
            a for a in self._tx.read(self.table).values() if a.is_expired(now) and not ruled(a)
        ]
        found.sort(key=lambda a: (a.expires_at, a.id))
        return found[:limit]

    async def to_verify(
        self, limit: int, verified_before: datetime | None = None
    ) -> list[Artifact]:
        def due(a: Artifact) -> bool:
            if a.verification is Verification.PENDING:
                return True
            return verified_before is not None and (
                a.verified_at is None or a.verified_at < verified_before
            )

        found = [
            a
            for a in self._tx.read(self.table).values()
            if a.state is ArtifactState.AVAILABLE and due(a)
        ]
        found.sort(
            key=lambda a: (
                a.verification is not Verification.PENDING,
                a.verified_at or a.created_at,
                str(a.id),
            )
        )
        return found[:limit]

    async def list(self, workspace_id: UUID, deleted: bool, page: PageRequest) -> Page[Artifact]:
        return keyset_page(
            (a for a in self._rows(workspace_id) if (a.state is ArtifactState.DELETED) == deleted),
            page,
        )

    async def get_many(
        self, workspace_id: UUID, artifact_ids: Collection[UUID]
    ) -> dict[UUID, Artifact]:
        rows = self._tx.read(self.table)
        found = (rows.get(artifact_id) for artifact_id in set(artifact_ids))
        return {a.id: a for a in found if a is not None and a.workspace_id == workspace_id}

    async def lock_until(
        self, workspace_id: UUID, artifact_ids: Collection[UUID], until: datetime
    ) -> None:
        for artifact in (await self.get_many(workspace_id, artifact_ids)).values():
            self._replace(artifact.id, evolve(artifact, locked_until=until))

    def _references(self) -> dict[tuple[UUID, UUID], UUID]:
        """(run, artifact) -> workspace; pairs whose run or artifact went are gone, as
        ON DELETE CASCADE removes them."""
        runs, artifacts = self._tx.read("runs"), self._tx.read(self.table)
        return {
            (run_id, artifact_id): workspace_id
            for (run_id, artifact_id), workspace_id in self._tx.read("run_references").items()
            if run_id in runs and artifact_id in artifacts
        }

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Collection[UUID]
    ) -> None:
        run, artifacts = self._tx.read("runs").get(run_id), self._tx.read(self.table)
        require(run is not None and run.workspace_id == workspace_id, "referencing run exists")
        require(all(a in artifacts for a in artifact_ids), "referenced artifacts exist")
        table = self._tx.write("run_references")
        for artifact_id in artifact_ids:
            table.setdefault((run_id, artifact_id), workspace_id)

    async def references_of_backup(
        self, workspace_id: UUID, backup_id: UUID
    ) -> dict[UUID, frozenset[UUID]]:
        runs = self._tx.read("runs")
        found: dict[UUID, set[UUID]] = {}
        for (run_id, artifact_id), workspace in self._references().items():
            if workspace == workspace_id and runs[run_id].backup_id == backup_id:
                found.setdefault(run_id, set()).add(artifact_id)
        return {run_id: frozenset(ids) for run_id, ids in found.items()}

    async def referrers(self, workspace_id: UUID, artifact_id: UUID) -> dict[UUID, int]:
        available: dict[UUID, int] = {}
        for artifact in self._rows(workspace_id):
            if artifact.state is ArtifactState.AVAILABLE:
                available[artifact.run_id] = available.get(artifact.run_id, 0) + 1
        return {
            run_id: available.get(run_id, 0)
            for (run_id, referenced), workspace in sorted(self._references().items())
            if workspace == workspace_id and referenced == artifact_id
        }
