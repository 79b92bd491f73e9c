"""The repository contract of restore drills and artifact manifests (contract 16): every
adapter stores, finds, lists, hands out and refuses the same."""

from __future__ import annotations

from uuid import UUID, uuid4

import attrs
import pytest
from contract_records import Adapter, at
from test_contract_restores import world

from strongroom.domain.backups import Backup, BackupState, DrillPolicy, Schedule
from strongroom.domain.drill_policy import DrillTarget
from strongroom.domain.drills import Drill, TableFacts
from strongroom.domain.pagination import PageRequest
from strongroom.ports.driven.repositories import IntegrityViolationError

TABLES = {
    "public.customers": TableFacts(2000, "0f" * 16),
    'é schema."odd" name': TableFacts(0, ""),
}


def drill(workspace_id: UUID, backup_id: UUID, created: float = 0) -> Drill:
    return Drill.queued(uuid4(), workspace_id, backup_id, at(created))


def backup_of(adapter: Adapter) -> tuple[UUID, UUID, UUID, UUID]:
    """A workspace with a backup, a run and an artifact: (workspace, backup, run, artifact)."""
    wid, aid, (_ada, _target, owner, run) = world(adapter)  # type: ignore[misc]
    return wid, owner.id, run.id, aid


def store(adapter: Adapter, *drills: Drill) -> None:
    with adapter.uow() as uow:
        for made in drills:
            uow.drills.add(made)
        uow.commit()


class TestDrills:
    def test_a_drill_comes_back_equal_in_every_state(self, adapter: Adapter) -> None:
        """Every field round-trips: times, seconds, bytes, the checks, the error."""
        wid, bid, rid, _ = backup_of(adapter)
        queued = drill(wid, bid)
        store(adapter, queued)
        running = queued.started(rid, at(1))
        checks = {"artifact_intact": True, "tables": 2, "rows": 2000, "artifact_id": "x"}
        done = running.finished(["table t has 1 rows, 2 were backed up"], checks, 10, 1.25, at(2))
        with adapter.uow() as uow:
            assert uow.drills.get(wid, queued.id) == queued
            uow.drills.update(done)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.get(wid, queued.id) == done
            assert uow.drills.get(wid, queued.id, for_update=True) == done
            assert uow.drills.get(uuid4(), queued.id) is None

    def test_a_drill_needs_a_backup_of_its_own_workspace(self, adapter: Adapter) -> None:
        wid, bid, _, _ = backup_of(adapter)
        other, _, _, _ = backup_of(adapter)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.drills.add(drill(other, bid))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.drills.update(drill(wid, bid))

    def test_the_runner_gets_the_oldest_queued_drill_of_any_workspace(
        self, adapter: Adapter
    ) -> None:
        wid, bid, rid, _ = backup_of(adapter)
        other_wid, other_bid, _, _ = backup_of(adapter)
        newer, older = drill(wid, bid, 5), drill(other_wid, other_bid, 1)
        running = drill(wid, bid, 0)
        store(adapter, newer, older, running)
        with adapter.uow() as uow:
            uow.drills.update(running.started(rid, at(0)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.next_queued() == older
            uow.drills.update(older.broke("nothing to drill", at(6)))
            uow.drills.update(newer.broke("nothing to drill", at(6)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.next_queued() is None

    def test_running_drills_started_before_a_time_are_found_oldest_first(
        self, adapter: Adapter
    ) -> None:
        wid, bid, rid, _ = backup_of(adapter)
        other_wid, other_bid, other_rid, _ = backup_of(adapter)
        late, early, queued = drill(wid, bid), drill(other_wid, other_bid), drill(wid, bid)
        store(adapter, late, early, queued)
        with adapter.uow() as uow:
            uow.drills.update(late.started(rid, at(5)))
            uow.drills.update(early.started(other_rid, at(1)))
            uow.commit()
        with adapter.uow() as uow:
            assert [d.id for d in uow.drills.started_before(at(6), 10)] == [early.id, late.id]
            assert [d.id for d in uow.drills.started_before(at(5), 10)] == [early.id]
            assert [d.id for d in uow.drills.started_before(at(6), 1)] == [early.id]

    def test_a_backups_drills_are_listed_newest_first_in_pages(self, adapter: Adapter) -> None:
        wid, bid, _, _ = backup_of(adapter)
        other_wid, other_bid, _, _ = backup_of(adapter)
        made = [drill(wid, bid, second) for second in range(3)]
        store(adapter, *made, drill(other_wid, other_bid))
        with adapter.uow() as uow:
            first = uow.drills.list_for_backup(wid, bid, PageRequest(2))
            assert list(first.items) == [made[2], made[1]]
            rest = uow.drills.list_for_backup(wid, bid, PageRequest(2, after=first.next_cursor))
            assert (list(rest.items), rest.next_cursor) == ([made[0]], None)
            assert list(uow.drills.list_for_backup(other_wid, bid, PageRequest(2)).items) == []

    def test_drills_go_with_their_backup(self, adapter: Adapter) -> None:
        wid, bid, _, _ = backup_of(adapter)
        made = drill(wid, bid)
        store(adapter, made)
        with adapter.uow() as uow:
            uow.backups.remove(wid, bid)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.get(wid, made.id) is None


class TestManifests:
    def test_a_manifest_comes_back_as_recorded_and_a_new_attempt_replaces_it(
        self, adapter: Adapter
    ) -> None:
        wid, _, _, aid = backup_of(adapter)
        with adapter.uow() as uow:
            assert uow.drills.manifest(wid, aid) is None
            uow.drills.record_manifest(wid, aid, {"public.t": TableFacts(1, "a" * 32)})
            uow.commit()
        with adapter.uow() as uow:
            uow.drills.record_manifest(wid, aid, TABLES)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.manifest(wid, aid) == TABLES
            assert uow.drills.manifest(uuid4(), aid) is None

    def test_a_manifest_needs_its_artifact_and_goes_with_its_workspace(
        self, adapter: Adapter
    ) -> None:
        wid, _, _, aid = backup_of(adapter)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.drills.record_manifest(wid, uuid4(), TABLES)
        with adapter.uow() as uow:
            uow.drills.record_manifest(wid, aid, TABLES)
            uow.commit()
        with adapter.uow() as uow:
            uow.workspaces.remove(wid)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.manifest(wid, aid) is None


DAILY = DrillPolicy(Schedule("0 3 * * *", "UTC"))


def drilled(adapter: Adapter, due: float) -> tuple[UUID, Backup]:
    """A workspace's active backup with scheduled drills, its next drill slot at ``due``."""
    wid, bid, _, _ = backup_of(adapter)
    with adapter.uow() as uow:
        stored = uow.backups.get(wid, bid)
        assert stored is not None
        changed = attrs.evolve(
            stored, state=BackupState.ACTIVE, paused=False, drill=DAILY, next_drill_at=at(due)
        )
        uow.backups.update(changed)
        uow.commit()
    return wid, changed


class TestScheduledDrills:
    def test_a_backup_keeps_its_drill_and_next_drill_slot(self, adapter: Adapter) -> None:
        wid, backup = drilled(adapter, 10)
        custom = DrillPolicy(Schedule("*/15 * * * *", "Europe/Paris"), DrillTarget("other"))
        with adapter.uow() as uow:
            assert uow.backups.get(wid, backup.id) == backup
            uow.backups.update(attrs.evolve(backup, drill=custom, next_drill_at=None))
            uow.commit()
        with adapter.uow() as uow:
            found = uow.backups.get(wid, backup.id)
            assert found is not None
            assert found.drill == custom
            assert found.next_drill_at is None

    def test_only_backups_whose_drill_slot_came_are_due_soonest_first(
        self, adapter: Adapter
    ) -> None:
        _, later = drilled(adapter, 20)
        _, sooner = drilled(adapter, 5)
        _, future = drilled(adapter, 100)
        _wid, paused = drilled(adapter, 1)
        with adapter.uow() as uow:
            uow.backups.update(attrs.evolve(paused, paused=True))
            uow.commit()
        with adapter.uow() as uow:
            due = [b.id for b in uow.drills.due_backups(at(50), 10)]
            assert due == [sooner.id, later.id]
            assert [b.id for b in uow.drills.due_backups(at(50), 1)] == [sooner.id]
        assert future.id not in due
        assert paused.id not in due

    def test_the_drill_slot_moves_once_from_the_slot_expected(self, adapter: Adapter) -> None:
        wid, backup = drilled(adapter, 5)
        with adapter.uow() as uow:
            assert uow.drills.advance_backup(wid, backup.id, at(5), at(90))
            uow.commit()
        with adapter.uow() as uow:
            assert not uow.drills.advance_backup(wid, backup.id, at(5), at(91))
            assert not uow.drills.advance_backup(uuid4(), backup.id, at(90), at(91))
            found = uow.backups.get(wid, backup.id)
            assert found is not None
            assert found.next_drill_at == at(90)

    def test_a_queued_or_running_drill_is_open(self, adapter: Adapter) -> None:
        wid, bid, rid, _ = backup_of(adapter)
        with adapter.uow() as uow:
            assert not uow.drills.has_open(wid, bid)
        queued = drill(wid, bid)
        store(adapter, queued)
        with adapter.uow() as uow:
            assert uow.drills.has_open(wid, bid)
            assert not uow.drills.has_open(uuid4(), bid)
            uow.drills.update(queued.started(rid, at(1)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.drills.has_open(wid, bid)
            uow.drills.update(queued.started(rid, at(1)).broke("x", at(2)))
            uow.commit()
        with adapter.uow() as uow:
            assert not uow.drills.has_open(wid, bid)
