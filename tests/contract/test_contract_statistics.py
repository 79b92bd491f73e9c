"""The monitoring figures, on every adapter: the same counts everywhere, and nothing in
them that names a workspace."""

from __future__ import annotations

from uuid import uuid4

import attrs
from contract_records import T0, Adapter, user, workspace
from test_contract_artifacts import artifact, available, world

from strongroom.domain.artifacts import ArtifactState, ArtifactStorage, Verification
from strongroom.domain.runs import Run, RunState
from strongroom.ports.driven.statistics import PoolUse


class TestStatistics:
    """``uow.statistics``: counts by state and each workspace's stored bytes."""

    def test_an_empty_store_counts_nothing(self, adapter: Adapter) -> None:
        """No runs, no artifacts, no workspaces."""
        with adapter.uow() as uow:
            assert uow.statistics.runs_by_state() == {}
            assert uow.statistics.artifacts_by_state() == {}
            assert uow.statistics.artifacts_by_verification() == {}
            assert uow.statistics.workspace_storage_bytes() == []

    def test_counts_by_state_and_stored_bytes_per_workspace(self, adapter: Adapter) -> None:
        """Two workspaces: one stores 10 + 20 bytes (its pending, deleted and customer
        artifacts do not count), the other nothing; runs and artifacts counted by state."""
        _, owner, run = world(adapter)
        world(adapter)
        finished = attrs.evolve(
            Run.manual(uuid4(), owner, T0), state=RunState.SUCCEEDED, finished_at=T0
        )
        adapter.store(finished)
        adapter.store(
            available(run, "a", 0, 100, size=10),
            available(run, "b", 0, 100, size=20),
            artifact(run, "c", size=400),
            artifact(run, "d", size=8000, state=ArtifactState.DELETED),
            available(run, "e", 0, 100, size=16000, storage=ArtifactStorage.CUSTOMER),
        )
        with adapter.uow() as uow:
            assert uow.statistics.runs_by_state() == {"running": 2, "succeeded": 1}
            assert uow.statistics.artifacts_by_state() == {
                "available": 3,
                "pending": 1,
                "deleted": 1,
            }
            assert sorted(uow.statistics.workspace_storage_bytes()) == [0, 30]

    def test_available_artifacts_by_verification_result(self, adapter: Adapter) -> None:
        """Available artifacts count by their last verification (a mismatch in any
        workspace shows); never-verified, pending-upload and deleted ones do not."""
        _, _, run = world(adapter)
        _, _, elsewhere = world(adapter)
        adapter.store(
            available(run, "ok", 0, 100, verification=Verification.OK),
            available(run, "waiting", 0, 100, verification=Verification.PENDING),
            available(run, "bad", 0, 100, verification=Verification.MISMATCH),
            available(elsewhere, "bad", 0, 100, verification=Verification.MISMATCH),
            available(elsewhere, "never", 0, 100),
            artifact(run, "announced", verification=Verification.PENDING),
            artifact(run, "gone", state=ArtifactState.DELETED, verification=Verification.MISSING),
        )
        with adapter.uow() as uow:
            assert uow.statistics.artifacts_by_verification() == {
                "ok": 1,
                "pending": 1,
                "mismatch": 2,
            }

    def test_a_workspace_without_backups_stores_zero(self, adapter: Adapter) -> None:
        """Every workspace is counted, with or without backups."""
        ada = user()
        adapter.store(ada, workspace(ada), workspace(ada))
        with adapter.uow() as uow:
            assert uow.statistics.workspace_storage_bytes() == [0, 0]

    def test_only_postgresql_has_a_pool_to_report(self, adapter: Adapter) -> None:
        """PostgreSQL reports its pool (asked before the unit takes a connection, nothing
        is lent); the in-memory store and SQLite have none."""
        with adapter.uow() as uow:
            use = uow.statistics.pool_use()
        if adapter.name != "postgres":
            assert use is None
            return
        assert isinstance(use, PoolUse)
        assert use.in_use == 0
        assert use.waiting == 0
        assert use.max_size >= 1
        assert use.idle >= 0
