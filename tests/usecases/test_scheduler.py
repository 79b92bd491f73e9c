"""The scheduler through the facade (contract 11): one ``queued`` run with trigger
``schedule`` per slot, skips for billing and overlap, catch-up without a burst, exactly one
run per slot with several scheduler instances, and waiting claims woken by its runs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.backups import BackupChanges, BackupKind, Schedule
from strongroom.domain.billing import BillingState
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller, PrincipalType
from strongroom.domain.runs import Run, RunState, RunTrigger
from strongroom.ports.driving import Strongroom, claims
from strongroom.ports.driving.scheduling import Scheduler, SchedulerReport
from support.people import audit_events, retention, workspace_admin

MINUTE = timedelta(minutes=1)
QUARTER = Schedule("*/15 * * * *", "UTC")


async def worker_of(facade: Strongroom, admin: Caller, name: str = "rack") -> Caller:
    """A worker of the admin's workspace: its caller."""
    issued = await facade.workers.create(admin, name)
    return await facade.access.authenticate(issued.token)


async def scheduled_backup(
    facade: Strongroom, admin: Caller, worker: Caller, name: str, schedule: Schedule = QUARTER
) -> UUID:
    """An active local backup of ``worker`` on ``schedule``."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.LOCAL)
    changes = BackupChanges(
        worker_id=worker.worker_id, retention=retention("P30D", "PT0S"), schedule=schedule
    )
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


async def runs_of(facade: Strongroom, admin: Caller, backup_id: UUID) -> list[Run]:
    """Every run of a backup, oldest first."""
    page = await facade.runs.list_for_backup(admin, backup_id, None, PageRequest(limit=100))
    return list(reversed(page.items))


async def next_run_at(facade: Strongroom, admin: Caller, backup_id: UUID) -> datetime | None:
    return (await facade.backups.get(admin, backup_id)).next_run_at


class TestSlots:
    """What a due slot gives."""

    async def test_a_due_slot_gives_one_queued_schedule_run(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Nothing before the slot; at it, one queued run (trigger ``schedule``), audited
        ``run.schedule`` by ``system``, and ``next_run_at`` the following slot."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        slot = datetime(2030, 1, 2, 12, 15, tzinfo=UTC)
        assert await next_run_at(facade, ada, backup_id) == slot
        clock.advance(14 * MINUTE)
        assert (await facade.scheduler.tick()).scheduled == 0
        assert await runs_of(facade, ada, backup_id) == []
        clock.advance(MINUTE)
        report = await facade.scheduler.tick()
        assert (report.scheduled, report.skipped, report.taken) == (1, 0, 0)
        [run] = await runs_of(facade, ada, backup_id)
        assert (run.state, run.trigger, run.worker_id) == (
            RunState.QUEUED,
            RunTrigger.SCHEDULE,
            rack.worker_id,
        )
        assert await next_run_at(facade, ada, backup_id) == slot + 15 * MINUTE
        [event] = await audit_events(facade, ada, "run.schedule")
        assert event.actor.type is PrincipalType.SYSTEM
        assert event.target_id == str(run.id)
        assert event.changes is not None
        assert event.changes["trigger"].after == "schedule"
        assert event.changes["slot"].after == slot.isoformat()
        assert (await facade.scheduler.tick()).scheduled == 0  # the slot is spent

    async def test_after_downtime_the_missed_slots_give_one_run(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Three hours (twelve slots) missed: one run, and the next slot is after now."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        clock.advance(timedelta(hours=3, minutes=7))
        assert (await facade.scheduler.run_due()).scheduled == 1
        assert len(await runs_of(facade, ada, backup_id)) == 1
        assert await next_run_at(facade, ada, backup_id) == datetime(2030, 1, 2, 15, 15, tzinfo=UTC)

    async def test_an_open_run_makes_the_slot_an_overlap_skip(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A queued run from the last slot: the next slot is skipped (``run.skip``,
        reason ``overlap``), and the one after that runs once the first finished."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        clock.advance(15 * MINUTE)
        await facade.scheduler.tick()
        clock.advance(15 * MINUTE)
        report = await facade.scheduler.tick()
        assert (report.scheduled, report.skipped) == (0, 1)
        [skip] = await audit_events(facade, ada, "run.skip")
        assert skip.actor.type is PrincipalType.SYSTEM
        assert skip.target_type == "backup"
        assert skip.target_id == str(backup_id)
        assert skip.changes is not None
        assert skip.changes["reason"].after == "overlap"
        assert len(await runs_of(facade, ada, backup_id)) == 1
        claimed = await facade.claims.claim(rack)
        assert claimed is not None
        await facade.artifacts.confirm(rack, claimed.run.id)
        clock.advance(15 * MINUTE)
        assert (await facade.scheduler.tick()).scheduled == 1
        assert [run.state for run in await runs_of(facade, ada, backup_id)] == [
            RunState.SUCCEEDED,
            RunState.QUEUED,
        ]

    async def test_a_workspace_refusing_new_runs_skips_for_billing(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A stopped workspace: the slot is skipped with reason ``billing`` and the
        schedule moves on; once active again, the next slot runs."""
        ada, workspace_id = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        await facade.workspaces.set_billing_state(workspace_id, BillingState.STOPPED)
        clock.advance(15 * MINUTE)
        assert (await facade.scheduler.tick()).skipped == 1
        [skip] = await audit_events(facade, ada, "run.skip")
        assert skip.changes is not None
        assert skip.changes["reason"].after == "billing"
        assert await runs_of(facade, ada, backup_id) == []
        assert await next_run_at(facade, ada, backup_id) == datetime(2030, 1, 2, 12, 30, tzinfo=UTC)
        await facade.workspaces.set_billing_state(workspace_id, BillingState.ACTIVE)
        clock.advance(15 * MINUTE)
        assert (await facade.scheduler.tick()).scheduled == 1


class TestScheduledOrNot:
    """Which backups the scheduler looks at."""

    async def test_a_paused_backup_is_not_due_and_resumes_without_a_burst(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Paused: no ``next_run_at``, no runs; resumed an hour later: the next slot is
        after the resume, and it gives one run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        await facade.backups.pause(ada, backup_id)
        assert await next_run_at(facade, ada, backup_id) is None
        clock.advance(timedelta(hours=1, minutes=1))
        assert (await facade.scheduler.run_due()).scheduled == 0
        await facade.backups.resume(ada, backup_id)
        assert await next_run_at(facade, ada, backup_id) == datetime(2030, 1, 2, 13, 15, tzinfo=UTC)
        clock.advance(14 * MINUTE)
        assert (await facade.scheduler.run_due()).scheduled == 1

    async def test_changing_or_removing_the_schedule_moves_or_clears_the_slot(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A new schedule recomputes ``next_run_at``; none clears it; a deleted backup is
        never scheduled."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        hourly = Schedule("0 * * * *", "UTC")
        await facade.backups.update(ada, backup_id, BackupChanges(schedule=hourly))
        assert await next_run_at(facade, ada, backup_id) == datetime(2030, 1, 2, 13, 0, tzinfo=UTC)
        await facade.backups.update(ada, backup_id, BackupChanges(schedule=None))
        assert await next_run_at(facade, ada, backup_id) is None
        other = await scheduled_backup(facade, ada, rack, "Other")
        await facade.backups.delete(ada, other)
        clock.advance(timedelta(hours=2))
        assert await facade.scheduler.run_due() == SchedulerReport()

    async def test_a_change_that_keeps_the_schedule_keeps_a_due_slot(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A rename between the slot and the scheduler's pass does not lose the slot."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        clock.advance(15 * MINUTE)
        await facade.backups.update(ada, backup_id, BackupChanges(name="Renamed"))
        assert await next_run_at(facade, ada, backup_id) == clock.now()
        assert (await facade.scheduler.tick()).scheduled == 1

    async def test_a_draft_is_never_due(self, facade: Strongroom, clock: ManualClock) -> None:
        """A backup with a schedule but an incomplete configuration gets no run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        draft = await facade.backups.create(ada, ada.scoped_workspace(), "Draft", BackupKind.LOCAL)
        await facade.backups.update(ada, draft.id, BackupChanges(schedule=QUARTER))
        clock.advance(timedelta(hours=1))
        assert (await facade.scheduler.run_due()).scheduled == 0


class TestManyInstances:
    """Several schedulers on one store."""

    async def test_concurrent_schedulers_give_each_slot_one_run(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Four scheduler instances ticking at once over 30 backups and four slots: one
        run per backup and slot (each finished before the next slot), the rest
        ``taken``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backups = [await scheduled_backup(facade, ada, rack, f"B{i}") for i in range(30)]
        schedulers = [Scheduler(facade.deps) for _ in range(4)]
        for _ in range(4):
            clock.advance(15 * MINUTE)
            reports = await asyncio.gather(*(s.run_due(batch=7) for s in schedulers))
            assert sum(r.scheduled for r in reports) == 30
            assert sum(r.skipped for r in reports) == 0
            while (claimed := await facade.claims.claim(rack)) is not None:
                await facade.artifacts.confirm(rack, claimed.run.id)
        for backup_id in backups:
            runs = await runs_of(facade, ada, backup_id)
            assert [run.state for run in runs] == [RunState.SUCCEEDED] * 4
            assert len({run.created_at for run in runs}) == 4


class TestWakeUps:
    """Waiting claims hear of new runs at once instead of at their next re-check."""

    async def test_a_waiting_claim_gets_a_scheduled_run(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A claim waiting 20 s is answered with the run the scheduler queues."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        waiting = asyncio.create_task(facade.claims.claim(rack, wait_seconds=20))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        clock.advance(15 * MINUTE)
        await facade.scheduler.tick()
        claimed = await asyncio.wait_for(waiting, 10)
        assert claimed is not None
        assert claimed.backup.id == backup_id
        assert claimed.run.trigger is RunTrigger.SCHEDULE

    async def test_a_waiting_claim_is_woken_by_a_trigger_not_by_the_re_check(
        self, facade: Strongroom, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With the periodic re-check pushed beyond the wait, only the trigger's
        announcement can answer the claim before its 20 s are up."""
        monkeypatch.setattr(claims, "SWEEP_SECONDS", 60.0)
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup_id = await scheduled_backup(facade, ada, rack, "Quarterly")
        waiting = asyncio.create_task(facade.claims.claim(rack, wait_seconds=20))
        await asyncio.sleep(0.2)
        run = await facade.runs.trigger(ada, backup_id)
        claimed = await asyncio.wait_for(waiting, 10)
        assert claimed is not None
        assert claimed.run.id == run.id
