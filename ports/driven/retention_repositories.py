"""What retention reads of a backup to decide (contract 15), and the references between
snapshot runs it keeps (contract 14: ``run_references``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol
from uuid import UUID

from strongroom.domain.artifacts import Artifact
from strongroom.domain.retention_plan import StoredArtifact
from strongroom.domain.runs import Run


class RetentionRepository(Protocol):
    """A backup's history as retention sees it, always inside one workspace (but for
    ``ruled_backups``, the job's one look-up across workspaces)."""

    async def ruled_backups(self) -> list[tuple[UUID, UUID]]:
        """The backups (workspace id, backup id) whose runs the keep rules decide: those
        ``Backup.decided_run_by_run`` (keep rules, or a snapshot backup), and those with
        runs that reference artifacts."""
        ...

    async def finished_runs(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[tuple[UUID, datetime]]:
        """Every succeeded run of the backup: its id and when it finished."""
        ...

    async def available_artifacts(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[StoredArtifact]:
        """Every available artifact of the backup: what the decision reads of it."""
        ...

    async def references(self, workspace_id: UUID, backup_id: UUID) -> dict[UUID, frozenset[UUID]]:
        """The artifacts each run of the backup references (run id -> artifact ids)."""
        ...

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Iterable[UUID]
    ) -> None:
        """Record that ``run_id`` references ``artifact_ids`` (again is no error)."""
        ...

    async def lock_for_removal(
        self, workspace_id: UUID, artifact_ids: Iterable[UUID], run_ids: Iterable[UUID]
    ) -> tuple[list[Artifact], list[Run]]:
        """The artifacts and runs of this workspace among those ids, locked until the unit
        of work ends (one round trip)."""
        ...

    async def store_removals(self, artifacts: Iterable[Artifact], runs: Iterable[Run]) -> None:
        """Store removed artifacts (their state) and the runs that no longer count them
        (their ``artifact_count`` and ``bytes``), together (one statement each)."""
        ...


def grouped(pairs: Iterable[tuple[UUID, UUID]]) -> dict[UUID, frozenset[UUID]]:
    """(run, artifact) pairs as run -> artifact ids."""
    found: dict[UUID, set[UUID]] = {}
    for run_id, artifact_id in pairs:
        found.setdefault(run_id, set()).add(artifact_id)
    return {run_id: frozenset(ids) for run_id, ids in found.items()}
