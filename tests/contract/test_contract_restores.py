"""The repository contract of restores (contract 11): every adapter stores, finds, hands
out and refuses the same."""

from __future__ import annotations

import threading
from datetime import timedelta
from uuid import UUID, uuid4

import attrs
import pytest
from contract_records import T0, Adapter, at, backup, user, workspace
from test_contract_artifacts import artifact

from strongroom.domain.backups import PostgresSource, S3Source
from strongroom.domain.restores import Restore, RestoreState
from strongroom.domain.runs import Run
from strongroom.ports.driven.repositories import IntegrityViolationError

BUCKET = S3Source(endpoint="https://s3.example.com:9000", bucket="restored", prefix="é/")
DATABASE = PostgresSource(host="db.example.com", port=6432, database="app")


def restore(
    workspace_id: UUID, artifact_id: UUID, created: float = 0, **changes: object
) -> Restore:
    """A queued restore of the artifact into a bucket."""
    built = Restore.queued(
        uuid4(), workspace_id, artifact_id, BUCKET, b"\x00sealed\xff", at(created)
    )
    return attrs.evolve(built, **changes)


def world(adapter: Adapter) -> tuple[UUID, UUID, object]:
    """A workspace with a backup, a run and an artifact stored: (workspace, artifact, ws)."""
    ada = user()
    target = workspace(ada)
    owner = backup(target.id)
    run = Run.manual(uuid4(), owner, T0)
    made = artifact(run)
    adapter.store(ada, target, owner, run, made)
    return target.id, made.id, (ada, target, owner, run)


class TestRestores:
    """Restores: scoped look-ups, updates of what may change, the runner's pick, cascades."""

    def test_a_restore_comes_back_equal_in_every_state(self, adapter: Adapter) -> None:
        """Every field round-trips: both target types, the sealed bytes, times, errors."""
        wid, aid, _ = world(adapter)
        queued = restore(wid, aid)
        running = restore(wid, aid, 1, target=DATABASE).start(at(2))
        succeeded = restore(wid, aid, 3).start(at(4)).succeed(at(5.000001))
        failed = restore(wid, aid, 6, target=DATABASE).start(at(7)).fail('Ω "no" ' * 10, at(8))
        for made in (queued, running, succeeded, failed):
            adapter.store(made)
        with adapter.uow() as uow:
            for stored in (queued, running, succeeded, failed):
                assert uow.restores.get(wid, stored.id) == stored
                assert uow.restores.get(wid, stored.id, for_update=True) == stored
        assert succeeded.sealed_credentials is None
        assert failed.state is RestoreState.FAILED

    def test_a_restore_is_found_only_in_its_own_workspace(self, adapter: Adapter) -> None:
        """Tenant scoping happens in the query."""
        wid, aid, (ada, *_rest) = world(adapter)
        other = workspace(ada)  # type: ignore[arg-type]
        adapter.store(other)
        made = restore(wid, aid)
        adapter.store(made)
        with adapter.uow() as uow:
            assert uow.restores.get(other.id, made.id) is None
            assert uow.restores.get(other.id, made.id, for_update=True) is None
            assert uow.restores.get(wid, uuid4()) is None

    def test_a_restore_needs_an_artifact_of_its_own_workspace(self, adapter: Adapter) -> None:
        """A missing artifact, or another workspace's, is refused."""
        wid, aid, (ada, *_rest) = world(adapter)
        other = workspace(ada)  # type: ignore[arg-type]
        adapter.store(other)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.restores.add(restore(wid, uuid4()))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.restores.add(restore(other.id, aid))

    def test_an_update_stores_state_times_error_and_credentials_only(
        self, adapter: Adapter
    ) -> None:
        """The target and the creation time never change; the credentials are erased."""
        wid, aid, _ = world(adapter)
        made = restore(wid, aid)
        adapter.store(made)
        done = made.start(at(1)).fail("refused", at(2))
        with adapter.uow() as uow:
            uow.restores.update(attrs.evolve(done, target=DATABASE, created_at=at(99)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.restores.get(wid, made.id) == done
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.restores.update(restore(wid, aid))

    def test_the_runner_gets_the_oldest_queued_restore_of_any_workspace(
        self, adapter: Adapter
    ) -> None:
        """Queued only, oldest first, whatever the workspace; none when none is queued."""
        wid, aid, _ = world(adapter)
        other_wid, other_aid, _ = world(adapter)
        newer = restore(wid, aid, 5)
        older = restore(other_wid, other_aid, 1)
        running = restore(wid, aid, 0).start(at(0))
        adapter.store(newer, older, running)
        with adapter.uow() as uow:
            assert uow.restores.next_queued() == older
        with adapter.uow() as uow:
            uow.restores.update(older.start(at(6)))
            uow.restores.update(newer.start(at(6)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.restores.next_queued() is None

    def test_expired_leases_are_found_across_workspaces_soonest_first(
        self, adapter: Adapter
    ) -> None:
        """Running restores whose lease ran out by ``now``, of any workspace, soonest
        expiry first, at most ``limit``; the attempt and the lease round-trip."""
        wid, aid, _ = world(adapter)
        other_wid, other_aid, _ = world(adapter)
        lease = timedelta(seconds=10)
        later = restore(wid, aid, 0).start(at(5), lease)  # expires at 15
        sooner = attrs.evolve(restore(other_wid, other_aid, 0).start(at(1), lease), attempt=2)
        alive = restore(wid, aid, 0).start(at(50), lease)  # expires at 60
        queued = restore(wid, aid, 0)
        adapter.store(later, sooner, alive, queued)
        with adapter.uow() as uow:
            assert uow.restores.lease_expired(at(20), 10) == [sooner, later]
            assert uow.restores.lease_expired(at(20), 1) == [sooner]
            assert uow.restores.lease_expired(at(10), 10) == []
            assert uow.restores.get(other_wid, sooner.id) == sooner
        requeued = sooner.expire_lease(at(20))
        with adapter.uow() as uow:
            uow.restores.update(requeued)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.restores.get(other_wid, sooner.id) == requeued
            assert (requeued.attempt, requeued.lease_expires_at) == (3, None)
            assert uow.restores.lease_expired(at(20), 10) == [later]

    def test_concurrent_runners_never_take_the_same_restore(self, adapter: Adapter) -> None:
        """Two runners at once over two queued restores: each takes a different one."""
        wid, aid, _ = world(adapter)
        first, second = restore(wid, aid, 1), restore(wid, aid, 2)
        adapter.store(first, second)
        barrier = threading.Barrier(2)
        taken: list[UUID] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                barrier.wait()
                with adapter.uow() as uow:
                    found = uow.restores.next_queued()
                    if found is not None:
                        uow.restores.update(found.start(at(3)))
                        taken.append(found.id)
                    uow.commit()
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors
        assert sorted(taken) == sorted([first.id, second.id])

    def test_restores_go_with_their_backup_and_workspace(self, adapter: Adapter) -> None:
        """Removing the artifact's backup removes its restores; so does the workspace."""
        wid, aid, (_ada, _target, owner, _run) = world(adapter)
        made = restore(wid, aid)
        adapter.store(made)
        with adapter.uow() as uow:
            uow.backups.remove(wid, owner.id)  # type: ignore[attr-defined]
            uow.commit()
        with adapter.uow() as uow:
            assert uow.restores.get(wid, made.id) is None
        other_wid, other_aid, _ = world(adapter)
        kept = restore(other_wid, other_aid)
        adapter.store(kept)
        with adapter.uow() as uow:
            uow.workspaces.remove(other_wid)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.restores.get(other_wid, kept.id) is None
