"""The repository contract of the scheduler: due backups, the compare-and-set of a slot,
open runs and the announcement of queued runs, the same on every adapter."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import attrs
from contract_records import T0, Adapter, at, backup, user, worker, workspace

from strongroom.domain.backups import Backup, BackupState, Schedule
from strongroom.domain.runs import Run, RunState, RunTrigger

EVERY_MINUTE = Schedule("* * * * *", "UTC")


def scheduled(workspace_id: UUID, next_run_at: datetime | None, **changes: Any) -> Backup:
    """An active backup on a minute schedule whose next slot is ``next_run_at``."""
    fields: dict[str, Any] = {
        "state": BackupState.ACTIVE,
        "schedule": EVERY_MINUTE,
        "next_run_at": next_run_at,
    }
    return attrs.evolve(backup(workspace_id), **(fields | changes))


class TestDue:
    """``backups.due``: what the scheduler looks at."""

    def test_due_backups_of_every_workspace_soonest_first_up_to_the_limit(
        self, adapter: Adapter
    ) -> None:
        """Slots at or before now, from every workspace, soonest first; not the future."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        late = scheduled(mine.id, at(-120))
        sooner = scheduled(theirs.id, at(-300))
        exactly_now = scheduled(mine.id, T0)
        future = scheduled(theirs.id, at(0.000001))
        adapter.store(ada, mine, theirs, late, sooner, exactly_now, future)
        with adapter.uow() as uow:
            assert [b.id for b in uow.backups.due(T0, 10)] == [sooner.id, late.id, exactly_now.id]
            assert [b.id for b in uow.backups.due(T0, 2)] == [sooner.id, late.id]
            assert uow.backups.due(at(-400), 10) == []
            [found, *_] = uow.backups.due(T0, 1)
            assert found == sooner

    def test_only_scheduled_backups_are_due(self, adapter: Adapter) -> None:
        """Paused, draft and unscheduled backups are never due, whatever they hold."""
        ada = user()
        mine = workspace(ada)
        due = scheduled(mine.id, at(-60))
        paused = scheduled(mine.id, at(-60), paused=True)
        draft = scheduled(mine.id, at(-60), state=BackupState.DRAFT)
        unscheduled = scheduled(mine.id, at(-60), schedule=None)
        none_yet = scheduled(mine.id, None)
        adapter.store(ada, mine, due, paused, draft, unscheduled, none_yet)
        with adapter.uow() as uow:
            assert [b.id for b in uow.backups.due(T0, 10)] == [due.id]


class TestAdvanceSchedule:
    """``backups.advance_schedule``: the compare-and-set that makes a slot one run."""

    def test_the_slot_moves_only_from_the_expected_value(self, adapter: Adapter) -> None:
        """True and moved from the expected slot; False and unchanged from another, from
        a removed backup, or from another workspace."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        owner = scheduled(mine.id, at(-60))
        adapter.store(ada, mine, theirs, owner)
        with adapter.uow() as uow:
            assert not uow.backups.advance_schedule(mine.id, owner.id, at(-61), at(60))
            assert not uow.backups.advance_schedule(theirs.id, owner.id, at(-60), at(60))
            assert uow.backups.advance_schedule(mine.id, owner.id, at(-60), at(60))
            assert not uow.backups.advance_schedule(mine.id, owner.id, at(-60), at(120))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.backups.get(mine.id, owner.id) == attrs.evolve(owner, next_run_at=at(60))
            assert not uow.backups.advance_schedule(mine.id, uuid4(), at(60), at(120))

    def test_a_rolled_back_move_leaves_the_slot(self, adapter: Adapter) -> None:
        """Without commit, the slot is still due."""
        ada = user()
        mine = workspace(ada)
        owner = scheduled(mine.id, at(-60))
        adapter.store(ada, mine, owner)
        with adapter.uow() as uow:
            assert uow.backups.advance_schedule(mine.id, owner.id, at(-60), at(60))
        with adapter.uow() as uow:
            assert [b.id for b in uow.backups.due(T0, 10)] == [owner.id]


class TestOpenRuns:
    """``runs.has_open``, ``runs.announce_queued`` and ``runs.workers_with_queued``."""

    def test_queued_or_running_runs_are_open_finished_ones_not(self, adapter: Adapter) -> None:
        """Per backup and workspace."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        idle, busy, running = (scheduled(mine.id, T0) for _ in range(3))
        done = attrs.evolve(
            Run.manual(uuid4(), idle, T0), state=RunState.SUCCEEDED, finished_at=at(1)
        )
        queued = Run.queued(uuid4(), busy, RunTrigger.SCHEDULE, T0)
        adapter.store(ada, mine, theirs, idle, busy, running, done, queued)
        adapter.store(Run.manual(uuid4(), running, T0))
        with adapter.uow() as uow:
            assert not uow.runs.has_open(mine.id, idle.id)
            assert uow.runs.has_open(mine.id, busy.id)
            assert uow.runs.has_open(mine.id, running.id)
            assert not uow.runs.has_open(theirs.id, busy.id)

    def test_announcing_queued_runs_commits_with_the_unit(self, adapter: Adapter) -> None:
        """The announcement joins the unit's writes and changes nothing stored."""
        ada = user()
        mine = workspace(ada)
        owner = scheduled(mine.id, T0)
        adapter.store(ada, mine, owner)
        run = Run.queued(uuid4(), owner, RunTrigger.SCHEDULE, T0)
        with adapter.uow() as uow:
            uow.runs.add(run)
            uow.runs.announce_queued(mine.id, owner.worker_id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.runs.get(mine.id, run.id) == run

    def test_the_waiting_workers_with_a_queued_run_in_one_statement(self, adapter: Adapter) -> None:
        """Of the pairs asked about, those whose worker has a queued run of a backup
        assigned to it in that workspace: not a running or finished run's worker, not a
        pair naming another workspace, not a worker nobody asked about."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        rack, shelf, busy, idle, stray = (worker(mine.id) for _ in range(5))
        owners = {w.id: scheduled(mine.id, None, worker_id=w.id) for w in (rack, shelf, busy)}
        queued = [Run.queued(uuid4(), owners[w.id], RunTrigger.API, T0) for w in (rack, shelf)]
        running = attrs.evolve(
            Run.queued(uuid4(), owners[busy.id], RunTrigger.API, T0),
            state=RunState.RUNNING,
            started_at=at(1),
        )
        adapter.store(ada, mine, theirs, rack, shelf, busy, idle, stray)
        adapter.store(*owners.values(), *queued, running)
        asked = [(mine.id, w.id) for w in (rack, busy, idle)] + [(theirs.id, shelf.id)]
        with adapter.uow() as uow:
            assert uow.runs.workers_with_queued(asked) == {(mine.id, rack.id)}
            assert uow.runs.workers_with_queued([]) == set()
