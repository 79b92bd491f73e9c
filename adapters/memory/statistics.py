"""Service-wide figures of the in-memory store, for monitoring."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

from strongroom.adapters.memory.store import Transaction
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.runs import Run
from strongroom.ports.driven.statistics import PoolUse


class MemoryStatisticsRepository:
    """Counts across every workspace of the store; there is no connection pool."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    async def runs_by_state(self) -> dict[str, int]:
        runs: list[Run] = list(self._tx.read("runs").values())
        return dict(Counter(run.state.value for run in runs))

    async def artifacts_by_state(self) -> dict[str, int]:
        artifacts: list[Artifact] = list(self._tx.read("artifacts").values())
        return dict(Counter(artifact.state.value for artifact in artifacts))

    async def artifacts_by_verification(self) -> dict[str, int]:
        artifacts: list[Artifact] = list(self._tx.read("artifacts").values())
        return dict(
            Counter(
                artifact.verification.value
                for artifact in artifacts
                if artifact.state is ArtifactState.AVAILABLE and artifact.verification is not None
            )
        )

    async def workspace_storage_bytes(self) -> list[int]:
        stored: dict[UUID, int] = dict.fromkeys(self._tx.read("workspaces"), 0)
        artifact: Artifact
        for artifact in self._tx.read("artifacts").values():
            if (
                artifact.state is ArtifactState.AVAILABLE
                and artifact.storage is ArtifactStorage.SERVICE
                and artifact.workspace_id in stored
            ):
                stored[artifact.workspace_id] += artifact.size
        return list(stored.values())

    async def pool_use(self) -> PoolUse | None:
        return None
