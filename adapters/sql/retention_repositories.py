"""SQL reads of retention and the references between snapshot runs (``run_references``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from strongroom.adapters.sql import run_rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Params, columns
from strongroom.adapters.sql.statements import SqlRepository, Step, require
from strongroom.domain.artifacts import Artifact
from strongroom.domain.retention_plan import StoredArtifact
from strongroom.domain.runs import Run
from strongroom.ports.driven.retention_repositories import grouped


class SqlRetentionRepository(SqlRepository):
    """What the keep rules decide on, read in one statement each."""

    def _backup(self, workspace_id: UUID, backup_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }

    async def ruled_backups(self) -> list[tuple[UUID, UUID]]:
        """Backups with keep rules or with references."""
        found = await self._db.fetch_all(Q.RETENTION_RULED_BACKUPS, {})
        read = self._codec.read_uuid
        return [(read(row["workspace_id"]), read(row["id"])) for row in found]

    async def finished_runs(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[tuple[UUID, datetime]]:
        """The backup's succeeded runs and their finish times (rows as tuples: one per run)."""
        found = await self._db.fetch_rows(
            Q.RETENTION_FINISHED_RUNS, self._backup(workspace_id, backup_id)
        )
        uuid, timestamp = self._codec.read_uuid, self._codec.read_timestamp
        return [(uuid(run_id), timestamp(finished_at)) for run_id, finished_at in found]

    async def available_artifacts(
        self, workspace_id: UUID, backup_id: UUID
    ) -> list[StoredArtifact]:
        """The backup's available artifacts: id, run, lock and hold (rows as tuples)."""
        found = await self._db.fetch_rows(
            Q.RETENTION_AVAILABLE_ARTIFACTS, self._backup(workspace_id, backup_id)
        )
        uuid, timestamp = self._codec.read_uuid, self._codec.read_timestamp
        return [
            StoredArtifact(
                uuid(artifact_id),
                uuid(run_id),
                None if locked_until is None else timestamp(locked_until),
                bool(held),
            )
            for artifact_id, run_id, locked_until, held in found
        ]

    async def references(self, workspace_id: UUID, backup_id: UUID) -> dict[UUID, frozenset[UUID]]:
        """Run -> the artifacts it references, for the backup's runs."""
        found = await self._db.fetch_all(
            Q.RETENTION_REFERENCES, self._backup(workspace_id, backup_id)
        )
        read = self._codec.read_uuid
        return grouped((read(row["run_id"]), read(row["artifact_id"])) for row in found)

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Iterable[UUID]
    ) -> None:
        """One insert per reference, in one pipeline."""
        workspace, run = self._codec.uuid(workspace_id), self._codec.uuid(run_id)
        steps: list[Step] = [
            (
                Q.RETENTION_REFERENCE_INSERT,
                {"workspace_id": workspace, "run_id": run, "artifact_id": self._codec.uuid(a)},
                "count",
            )
            for a in artifact_ids
        ]
        if steps:
            await self._db.write_all(steps)

    async def lock_for_removal(
        self, workspace_id: UUID, artifact_ids: Iterable[UUID], run_ids: Iterable[UUID]
    ) -> tuple[list[Artifact], list[Run]]:
        """Both look-ups ``FOR UPDATE`` in one pipeline (``BEGIN`` with them)."""
        codec = self._codec
        workspace = codec.uuid(workspace_id)
        artifacts, runs = await self._db.write_all(
            [
                (
                    Q.RETENTION_LOCK_ARTIFACTS,
                    {
                        "workspace_id": workspace,
                        "ids": codec.array([codec.uuid(i) for i in artifact_ids]),
                    },
                    "all",
                ),
                (
                    Q.RETENTION_LOCK_RUNS,
                    {
                        "workspace_id": workspace,
                        "ids": codec.array([codec.uuid(i) for i in run_ids]),
                    },
                    "all",
                ),
            ]
        )
        return (
            [run_rows.artifact_from_row(row, codec) for row in artifacts],
            [run_rows.run_from_row(row, codec) for row in runs],
        )

    async def store_removals(self, artifacts: Iterable[Artifact], runs: Iterable[Run]) -> None:
        """One update of the artifacts and one of the runs per workspace, in one pipeline."""
        codec = self._codec
        steps: list[Step] = []
        expected: list[int] = []
        by_workspace: dict[UUID, tuple[list[Params], list[Params]]] = {}
        for artifact in artifacts:
            by_workspace.setdefault(artifact.workspace_id, ([], []))[0].append(
                {
                    "id": codec.uuid(artifact.id),
                    "state": artifact.state.value,
                    "upload_id": artifact.upload_id,
                }
            )
        for run in runs:
            by_workspace.setdefault(run.workspace_id, ([], []))[1].append(
                {"id": codec.uuid(run.id), "artifact_count": run.artifact_count, "bytes": run.bytes}
            )
        for workspace_id, (artifact_updates, run_updates) in by_workspace.items():
            workspace = {"workspace_id": codec.uuid(workspace_id)}
            for query, written in (
                (Q.RETENTION_STORE_ARTIFACTS, artifact_updates),
                (Q.RETENTION_STORE_RUNS, run_updates),
            ):
                if written:
                    steps.append((query, {**columns(written, codec), **workspace}, "count"))
                    expected.append(len(written))
        if steps:
            changed = await self._db.write_all(steps)
            require(changed == expected, "update of a missing artifact or run")
