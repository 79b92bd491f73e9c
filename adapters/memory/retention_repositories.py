"""In-memory reads of retention and the references between snapshot runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.tables import MemoryRepository, require
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import Backup
from strongroom.domain.retention_plan import StoredArtifact
from strongroom.domain.runs import Run, RunState
from strongroom.ports.driven.retention_repositories import grouped


class MemoryRetentionRepository(MemoryRepository):
    """``run_references`` rows keyed by (run id, artifact id), holding the workspace id."""

    table = "run_references"

    async def ruled_backups(self) -> list[tuple[UUID, UUID]]:
        backups: Mapping[UUID, Backup] = self._tx.read("backups")
        runs: Mapping[UUID, Run] = self._tx.read("runs")
        found = {(b.workspace_id, b.id) for b in backups.values() if b.decided_run_by_run}
        for run_id, _ in self._tx.read(self.table):
            run = runs.get(run_id)
            if run is not None:
                found.add((run.workspace_id, run.backup_id))
        return sorted(found)

    async def finished_runs(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[tuple[UUID, datetime]]:
        runs: Mapping[UUID, Run] = self._tx.read("runs")
        return [
            (r.id, r.finished_at)
            for r in runs.values()
            if r.workspace_id == workspace_id
            and r.backup_id == backup_id
            and r.state is RunState.SUCCEEDED
            and r.finished_at is not None
        ]

    async def available_artifacts(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[StoredArtifact]:
        artifacts: Mapping[UUID, Artifact] = self._tx.read("artifacts")
        return [
            StoredArtifact(a.id, a.run_id, a.locked_until, a.held)
            for a in artifacts.values()
            if a.workspace_id == workspace_id
            and a.backup_id == backup_id
            and a.state is ArtifactState.AVAILABLE
        ]

    async def references(self, workspace_id: UUID, backup_id: UUID) -> dict[UUID, frozenset[UUID]]:
        runs: Mapping[UUID, Run] = self._tx.read("runs")
        return grouped(
            (run_id, artifact_id)
            for (run_id, artifact_id), owner in self._tx.read(self.table).items()
            if owner == workspace_id
            and (run := runs.get(run_id)) is not None
            and run.backup_id == backup_id
        )

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Iterable[UUID]
    ) -> None:
        runs: Mapping[UUID, Run] = self._tx.read("runs")
        artifacts: Mapping[UUID, Artifact] = self._tx.read("artifacts")
        require(run_id in runs, "referencing run exists")
        for artifact_id in artifact_ids:
            require(artifact_id in artifacts, "referenced artifact exists")
            self._tx.write(self.table)[run_id, artifact_id] = workspace_id

    async def lock_for_removal(
        self, workspace_id: UUID, artifact_ids: Iterable[UUID], run_ids: Iterable[UUID]
    ) -> tuple[list[Artifact], list[Run]]:
        artifacts: Mapping[UUID, Artifact] = self._tx.read("artifacts")
        runs: Mapping[UUID, Run] = self._tx.read("runs")
        found = [artifacts[i] for i in set(artifact_ids) if i in artifacts]
        counted = [runs[i] for i in set(run_ids) if i in runs]
        return (
            sorted((a for a in found if a.workspace_id == workspace_id), key=lambda a: a.id),
            sorted((r for r in counted if r.workspace_id == workspace_id), key=lambda r: r.id),
        )

    async def store_removals(self, artifacts: Iterable[Artifact], runs: Iterable[Run]) -> None:
        stored_artifacts = self._tx.write("artifacts")
        stored_runs = self._tx.write("runs")
        for artifact in artifacts:
            require(artifact.id in stored_artifacts, "update of a missing artifact")
            kept = stored_artifacts[artifact.id]
            stored_artifacts[artifact.id] = evolve(
                kept, state=artifact.state, upload_id=artifact.upload_id
            )
        for run in runs:
            require(run.id in stored_runs, "update of a missing run")
            kept_run = stored_runs[run.id]
            stored_runs[run.id] = evolve(
                kept_run, artifact_count=run.artifact_count, bytes=run.bytes
            )
