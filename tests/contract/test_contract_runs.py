"""The repository contract of runs: every adapter stores, finds and refuses the same."""

from __future__ import annotations

from uuid import uuid4

import attrs
import pytest
from contract_records import T0, Adapter, at, backup, user, workspace
from test_contract_artifacts import artifact

from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import Progress, Run, RunState, RunTrigger
from strongroom.ports.driven.repositories import IntegrityViolationError


class TestRuns:
    """Runs: scoped look-ups, updates of what may change, cascades."""

    def test_a_run_comes_back_equal_in_every_state(self, adapter: Adapter) -> None:
        """Every field round-trips, instants to the microsecond."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        running = Run.manual(uuid4(), owner, T0)
        queued = attrs.evolve(
            Run.queued(uuid4(), owner, RunTrigger.SCHEDULE, at(1)), worker_id=uuid4()
        )
        failed = attrs.evolve(
            Run.manual(uuid4(), owner, at(2)),
            state=RunState.FAILED,
            finished_at=at(3),
            error="disk full",
            artifact_count=3,
            bytes=5 * 1024**4,
        )
        claimed = attrs.evolve(
            queued.claim(uuid4(), at(4)).heartbeat(at(5), Progress(7, None, 'Ω reading "/var"')),
            id=uuid4(),
            attempt=3,
            cancel_requested=True,
        )
        reporting = attrs.evolve(
            Run.queued(uuid4(), owner, RunTrigger.API, at(6)).claim(uuid4(), at(6)),
            progress=Progress(0, 5 * 1024**4, None, at(6.000001)),
        )
        adapter.store(ada, target, owner, running, queued, failed, claimed, reporting)
        with adapter.uow() as uow:
            for stored in (running, queued, failed, claimed, reporting):
                assert uow.runs.get(target.id, stored.id) == stored
                assert uow.runs.get(target.id, stored.id, for_update=True) == stored

    def test_a_run_is_found_only_in_its_own_workspace(self, adapter: Adapter) -> None:
        """Tenant scoping happens in the query."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        owner = backup(mine.id)
        run = Run.manual(uuid4(), owner, T0)
        adapter.store(ada, mine, theirs, owner, run)
        with adapter.uow() as uow:
            assert uow.runs.get(theirs.id, run.id) is None
            assert uow.runs.get(theirs.id, run.id, for_update=True) is None

    def test_a_run_needs_a_backup_of_its_own_workspace(self, adapter: Adapter) -> None:
        """A run pointing at a missing backup, or at another workspace's, is refused."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        foreign = backup(theirs.id)
        adapter.store(ada, mine, theirs, foreign)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.runs.add(Run.manual(uuid4(), backup(mine.id), T0))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.runs.add(attrs.evolve(Run.manual(uuid4(), foreign, T0), workspace_id=mine.id))

    def test_an_update_stores_state_times_counts_and_worker_only(self, adapter: Adapter) -> None:
        """State, times, counts, error and the holding worker change; trigger and creation
        stay."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        run = Run.manual(uuid4(), owner, T0)
        adapter.store(ada, target, owner, run)
        done = attrs.evolve(run.succeeded(2, 4096, at(60)), worker_id=uuid4())
        with adapter.uow() as uow:
            uow.runs.update(attrs.evolve(done, trigger=RunTrigger.API, created_at=at(99)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.runs.get(target.id, run.id) == done

    def test_an_update_stores_the_lifecycle_fields(self, adapter: Adapter) -> None:
        """Attempt, lease, cancel request and progress change with the run and come back."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        run = Run.queued(uuid4(), owner, RunTrigger.API, T0)
        adapter.store(ada, target, owner, run)
        claimed = run.claim(uuid4(), at(1))
        reported = claimed.heartbeat(at(30), Progress(10, 100, "half"))
        for changed in (
            claimed,
            reported,
            reported.request_cancel(at(31)),
            reported.expire_lease(at(91)),
        ):
            with adapter.uow() as uow:
                uow.runs.update(changed)
                uow.commit()
            with adapter.uow() as uow:
                assert uow.runs.get(target.id, run.id) == changed

    def test_a_backups_runs_are_listed_newest_first_by_state(self, adapter: Adapter) -> None:
        """Keyset pages of one backup's runs, optionally of one state; nothing of another
        backup, and nothing when asked from another workspace."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        owner, sibling = backup(mine.id), backup(mine.id)
        tied = [Run.queued(uuid4(), owner, RunTrigger.API, at(1)) for _ in range(3)]
        done = Run.manual(uuid4(), owner, at(2)).succeeded(1, 1, at(3))
        late = Run.manual(uuid4(), owner, at(4))
        other = Run.manual(uuid4(), sibling, at(5))
        adapter.store(ada, mine, theirs, owner, sibling, *tied, done, late, other)
        newest_first = [late, done, *sorted(tied, key=lambda run: run.id, reverse=True)]
        with adapter.uow() as uow:
            seen, cursor = [], None
            while True:
                page = uow.runs.list_for_backup(mine.id, owner.id, None, PageRequest(2, cursor))
                seen.extend(page.items)
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert seen == newest_first
            queued = uow.runs.list_for_backup(mine.id, owner.id, RunState.QUEUED, PageRequest())
            assert list(queued.items) == newest_first[2:]
            running = uow.runs.list_for_backup(mine.id, owner.id, RunState.RUNNING, PageRequest())
            assert list(running.items) == [late]
            assert not uow.runs.list_for_backup(theirs.id, owner.id, None, PageRequest()).items

    def test_an_update_of_a_missing_run_is_an_integrity_violation(self, adapter: Adapter) -> None:
        """Updating nothing is a bug, not a no-op."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        adapter.store(ada, target, owner)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.runs.update(Run.manual(uuid4(), owner, T0))

    def test_removing_a_backup_or_its_workspace_removes_its_runs(self, adapter: Adapter) -> None:
        """Runs go with their backup and their workspace, and nothing else goes."""
        ada = user()
        target, other = workspace(ada), workspace(ada)
        first, second, elsewhere = backup(target.id), backup(target.id), backup(other.id)
        gone = Run.manual(uuid4(), first, T0)
        kept = Run.manual(uuid4(), second, T0)
        far = Run.manual(uuid4(), elsewhere, T0)
        adapter.store(ada, target, other, first, second, elsewhere, gone, kept, far)
        with adapter.uow() as uow:
            uow.backups.remove(target.id, first.id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.runs.get(target.id, gone.id) is None
            assert uow.runs.get(target.id, kept.id) == kept
            uow.workspaces.remove(target.id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.runs.get(target.id, kept.id) is None
            assert uow.runs.get(other.id, far.id) == far

    def test_runs_whose_lease_expired_are_found_in_every_workspace(self, adapter: Adapter) -> None:
        """Running runs with a lease at or before now, soonest first, at most ``limit``;
        not a live lease, a manual run, or a finished run."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        own, other = backup(mine.id), backup(theirs.id)
        late = Run.queued(uuid4(), own, RunTrigger.API, T0).claim(uuid4(), at(10))
        early = Run.queued(uuid4(), other, RunTrigger.API, T0).claim(uuid4(), at(5))
        live = Run.queued(uuid4(), own, RunTrigger.API, T0).claim(uuid4(), at(100))
        done = Run.queued(uuid4(), own, RunTrigger.API, T0).claim(uuid4(), at(0))
        done = done.fail("disk full", at(1))
        manual = Run.manual(uuid4(), own, T0)
        adapter.store(ada, mine, theirs, own, other, late, early, live, done, manual)
        now = late.lease_expires_at
        assert now is not None
        with adapter.uow() as uow:
            assert uow.runs.lease_expired(now, 10) == [early, late]
            assert uow.runs.lease_expired(now, 1) == [early]

    def test_manual_runs_left_with_pending_uploads_are_found_in_every_workspace(
        self, adapter: Adapter
    ) -> None:
        """Running manual runs whose pending artifacts were all announced at or before the
        bound, oldest first, at most ``limit``; not one with a later announcement, one with
        nothing pending, a claimed run or a finished one (contract 13, issue 27 finding 11)."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        own, other = backup(mine.id), backup(theirs.id)
        old = Run.manual(uuid4(), own, T0)
        older = Run.manual(uuid4(), other, at(-5))
        recent = Run.manual(uuid4(), own, at(1))
        bare = Run.manual(uuid4(), own, at(2))
        confirmed = Run.manual(uuid4(), own, at(3))
        failed = Run.manual(uuid4(), own, at(4)).fail("disk full", at(5))
        claimed = Run.queued(uuid4(), own, RunTrigger.API, at(6)).claim(uuid4(), at(6))
        pending = [
            artifact(old, "a", 10),
            artifact(old, "b", 20),
            artifact(older, "a", 0),
            artifact(recent, "a", 10),
            artifact(recent, "b", 21),
            artifact(confirmed, "a", 10, state=ArtifactState.AVAILABLE),
            artifact(failed, "a", 10),
            artifact(claimed, "a", 10),
        ]
        adapter.store(ada, mine, theirs, own, other, old, older, recent, bare, confirmed)
        adapter.store(failed, claimed, *pending)
        with adapter.uow() as uow:
            assert uow.runs.left_manual(at(20), 10) == [older, old]
            assert uow.runs.left_manual(at(20), 1) == [older]
            assert uow.runs.left_manual(at(19), 10) == [older]
            assert uow.runs.left_manual(at(21), 10) == [older, old, recent]
