"""The contract under concurrency: locks taken through the ports serialise what they must.

Each test starts many threads at once (a barrier) doing the read-check-write of a use case
in their own unit of work, and checks that the database, not luck, kept the invariant.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from uuid import uuid4

import attrs
from contract_records import Adapter, at, backup, user, workspace

from strongroom.domain.backups import BackupKind, RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.pagination import PageRequest
from strongroom.domain.quotas import ensure_room
from strongroom.domain.runs import Run, RunState, RunTrigger
from strongroom.ports.driven.repositories import IdempotencyKeyTakenError, IdempotencyRecord

THREADS = 24
R = TypeVar("R")


def all_at_once(count: int, attempt: Callable[[int], R]) -> list[R]:
    """Run ``attempt(0..count-1)`` on ``count`` threads released together."""
    barrier = threading.Barrier(count)

    def released(index: int) -> R:
        barrier.wait()
        return attempt(index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(released, range(count)))


class TestConcurrency:
    """Exact quotas, write-once values and single reservations under concurrent writers."""

    def test_a_workspace_lock_keeps_the_backup_quota_exact(self, adapter: Adapter) -> None:
        """Many creators against a limit of 5 create exactly 5."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target)
        limit = 5

        def create(index: int) -> bool:
            with adapter.uow() as uow:
                assert uow.workspaces.get(target.id, for_update=True) is not None
                if uow.backups.count(target.id) >= limit:
                    return False
                uow.backups.add(backup(target.id, f"backup {index}"))
                uow.commit()
                return True

        created = all_at_once(THREADS, create)
        assert created.count(True) == limit
        with adapter.uow() as uow:
            assert uow.backups.count(target.id) == limit
            assert len(uow.backups.list(target.id, PageRequest()).items) == limit

    def test_a_person_lock_keeps_the_workspace_quota_exact(self, adapter: Adapter) -> None:
        """Many workspace creations by one person against a limit of 3 create exactly 3."""
        ada = user()
        adapter.store(ada)

        def create(_index: int) -> bool:
            with adapter.uow() as uow:
                assert uow.users.get(ada.id, for_update=True) is not None
                try:
                    ensure_room("workspaces_per_user", 3, uow.workspaces.count_created_by(ada.id))
                except Exception:
                    return False
                uow.workspaces.add(workspace(ada))
                uow.commit()
                return True

        assert all_at_once(THREADS, create).count(True) == 3
        with adapter.uow() as uow:
            assert uow.workspaces.count_created_by(ada.id) == 3

    def test_a_backup_lock_keeps_retention_write_once(self, adapter: Adapter) -> None:
        """Concurrent different retention writes: exactly one policy is ever stored."""
        ada = user()
        target = workspace(ada)
        stored = backup(target.id)
        adapter.store(ada, target, stored)

        def set_retention(index: int) -> RetentionPolicy | None:
            policy = RetentionPolicy(Duration(86_400 + index), Duration(0))
            with adapter.uow() as uow:
                current = uow.backups.get(target.id, stored.id, for_update=True)
                assert current is not None
                if current.retention is not None:
                    return None
                uow.backups.update(attrs.evolve(current, retention=policy, updated_at=at(index)))
                uow.commit()
                return policy

        winners = [policy for policy in all_at_once(THREADS, set_retention) if policy]
        assert len(winners) == 1
        with adapter.uow() as uow:
            final = uow.backups.get(target.id, stored.id)
        assert final is not None
        assert final.retention == winners[0]

    def test_one_idempotency_key_is_reserved_once(self, adapter: Adapter) -> None:
        """Concurrent reservations of one key: one wins, every other sees it taken."""

        def reserve(index: int) -> bool:
            record = IdempotencyRecord("scope", "key", f"fingerprint {index}", at(0))
            with adapter.uow() as uow:
                try:
                    uow.idempotency.reserve(record, expired_before=at(-86_400))
                except IdempotencyKeyTakenError:
                    return False
                uow.commit()
                return True

        assert all_at_once(THREADS, reserve).count(True) == 1


class TestClaims:
    """A queued run goes to exactly one of the claimers racing for it."""

    def test_two_concurrent_claims_of_one_queued_run_give_it_once(self, adapter: Adapter) -> None:
        """Two claimers at once: one gets the run (and stores it running), the other none."""
        ada = user()
        target = workspace(ada)
        worker_id = uuid4()
        owner = attrs.evolve(backup(target.id), worker_id=worker_id)
        run = Run.queued(uuid4(), owner, RunTrigger.API, at(0))
        adapter.store(ada, target, owner, run)

        def claim(_index: int) -> Run | None:
            with adapter.uow() as uow:
                found = uow.runs.next_queued(target.id, worker_id)
                if found is None:
                    return None
                claimed = found.claim(worker_id, at(1))
                uow.runs.update(claimed)
                uow.commit()
                return claimed

        results = all_at_once(2, claim)
        assert sorted(result is None for result in results) == [False, True]
        with adapter.uow() as uow:
            stored = uow.runs.get(target.id, run.id)
            assert stored is not None
            assert stored.state is RunState.RUNNING
            assert stored.worker_id == worker_id
            assert uow.runs.next_queued(target.id, worker_id) is None

    def test_two_concurrent_service_claims_of_one_cloud_run_give_it_once(
        self, adapter: Adapter
    ) -> None:
        """The service's executors race for one queued cloud run: one gets it."""
        ada = user()
        target = workspace(ada)
        owner = attrs.evolve(backup(target.id), kind=BackupKind.CLOUD)
        run = Run.queued(uuid4(), owner, RunTrigger.API, at(0))
        adapter.store(ada, target, owner, run)

        def claim(_index: int) -> Run | None:
            with adapter.uow() as uow:
                found = uow.runs.next_queued_cloud()
                if found is None:
                    return None
                claimed = found.claim(None, at(1))
                uow.runs.update(claimed)
                uow.commit()
                return claimed

        results = all_at_once(2, claim)
        assert sorted(result is None for result in results) == [False, True]
        with adapter.uow() as uow:
            assert uow.runs.next_queued_cloud() is None

    def test_the_oldest_queued_cloud_run_of_any_workspace_comes_first(
        self, adapter: Adapter
    ) -> None:
        """Cloud backups' queued runs only, across workspaces, oldest first."""
        ada = user()
        one, two = workspace(ada), workspace(ada)
        cloud_one = attrs.evolve(backup(one.id), kind=BackupKind.CLOUD)
        cloud_two = attrs.evolve(backup(two.id), kind=BackupKind.CLOUD)
        local = attrs.evolve(backup(one.id), kind=BackupKind.LOCAL, worker_id=uuid4())
        older = Run.queued(uuid4(), cloud_two, RunTrigger.API, at(1))
        newer = Run.queued(uuid4(), cloud_one, RunTrigger.SCHEDULE, at(2))
        not_cloud = Run.queued(uuid4(), local, RunTrigger.API, at(0))
        running = Run.queued(uuid4(), cloud_one, RunTrigger.API, at(0)).claim(None, at(0))
        adapter.store(ada, one, two, cloud_one, cloud_two, local, newer, older, not_cloud, running)
        with adapter.uow() as uow:
            assert uow.runs.next_queued_cloud() == older

    def test_the_oldest_queued_run_of_the_workers_backups_comes_first(
        self, adapter: Adapter
    ) -> None:
        """Only the worker's own backups' queued runs, oldest first; none of another worker."""
        ada = user()
        target = workspace(ada)
        worker_id = uuid4()
        mine = attrs.evolve(backup(target.id, "mine"), worker_id=worker_id)
        theirs = attrs.evolve(backup(target.id, "theirs"), worker_id=uuid4())
        older = Run.queued(uuid4(), mine, RunTrigger.API, at(1))
        newer = Run.queued(uuid4(), mine, RunTrigger.API, at(2))
        foreign = Run.queued(uuid4(), theirs, RunTrigger.API, at(0))
        running = Run.manual(uuid4(), mine, at(0))
        adapter.store(ada, target, mine, theirs, newer, older, foreign, running)
        with adapter.uow() as uow:
            assert uow.runs.next_queued(target.id, worker_id) == older
            assert uow.runs.next_queued(workspace(ada).id, worker_id) is None
