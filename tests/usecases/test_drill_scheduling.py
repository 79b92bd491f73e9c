"""Scheduled restore drills (contract 16): ``drill: {schedule}`` on a cloud backup gives one
queued drill per due drill slot, through the same use case as ``POST .../drills``; exactly
one with several schedulers; a slot is skipped while a drill is still open."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.backups import BackupChanges, BackupKind, DrillPolicy, S3Source, Schedule
from strongroom.domain.drill_policy import DrillTarget
from strongroom.domain.drills import Drill, DrillState
from strongroom.domain.errors import ValidationFailedError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.drills import Drills, DrillScheduleReport
from support.people import audit_events, retention, workspace_admin

HOURLY = DrillPolicy(Schedule("0 * * * *", "UTC"))
ACTIVE = BackupChanges(
    source=S3Source("https://s3.example.com", "src"),
    credentials={"access_key_id": "AKIA", "secret_access_key": "secret"},
    retention=retention("P30D", "PT0S"),
)


async def drilled_backup(facade: Strongroom, admin: Caller, wid: UUID) -> UUID:
    backup = await facade.backups.create(admin, wid, "Cloud", BackupKind.CLOUD, drill=HOURLY)
    await facade.backups.update(admin, backup.id, ACTIVE)
    return backup.id


async def drills_of(facade: Strongroom, admin: Caller, backup_id: UUID) -> list[Drill]:
    page = await facade.drills.list_for_backup(admin, backup_id, PageRequest(limit=50))
    return list(page.items)


async def test_a_due_drill_slot_gives_one_queued_drill(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Nothing before the slot; at it one queued drill audited ``drill.schedule`` by
    ``system``; the next slot follows; missed slots give one drill, not a burst."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup_id = await drilled_backup(facade, ada, wid)
    backup = await facade.backups.get(ada, backup_id)
    slot = backup.next_drill_at
    assert slot is not None
    assert slot > clock.now()
    assert await facade.drills.schedule_due() == DrillScheduleReport()
    clock.advance(slot - clock.now())
    assert (await facade.drills.schedule_due()).scheduled == 1
    (drill,) = await drills_of(facade, ada, backup_id)
    assert drill.state is DrillState.QUEUED
    (event,) = await audit_events(facade, ada, "drill.schedule")
    assert event.actor.type == "system"
    assert event.target_id == str(drill.id)
    assert (await facade.backups.get(ada, backup_id)).next_drill_at == slot + timedelta(hours=1)
    assert (await facade.drills.schedule_due()).scheduled == 0
    async with facade.deps.uow() as uow:
        stored = await uow.drills.get(wid, drill.id)
        assert stored is not None
        await uow.drills.update(stored.broke("done", clock.now()))
        await uow.commit()
    clock.advance(timedelta(hours=5))
    assert (await facade.drills.schedule_due()).scheduled == 1
    assert len(await drills_of(facade, ada, backup_id)) == 2


async def test_a_slot_while_a_drill_is_open_is_skipped(
    facade: Strongroom, clock: ManualClock
) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup_id = await drilled_backup(facade, ada, wid)
    await facade.drills.create(ada, backup_id)
    clock.advance(timedelta(hours=1))
    report = await facade.drills.schedule_due()
    assert (report.scheduled, report.skipped) == (0, 1)
    assert len(await drills_of(facade, ada, backup_id)) == 1
    (event,) = await audit_events(facade, ada, "drill.skip")
    assert event.changes is not None
    assert event.changes["reason"].after == "overlap"


async def test_two_schedulers_give_one_drill_per_slot(
    facade: Strongroom, clock: ManualClock
) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup_id = await drilled_backup(facade, ada, wid)
    clock.advance(timedelta(hours=1))
    schedulers = [Drills(facade.deps, facade.access, facade.artifacts) for _ in range(2)]
    reports = await asyncio.gather(*(s.schedule_due() for s in schedulers))
    assert sum(r.scheduled for r in reports) == 1
    assert len(await drills_of(facade, ada, backup_id)) == 1


async def test_paused_and_draft_backups_are_not_drilled(
    facade: Strongroom, clock: ManualClock
) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    draft = await facade.backups.create(ada, wid, "Draft", BackupKind.CLOUD, drill=HOURLY)
    assert draft.next_drill_at is None
    backup_id = await drilled_backup(facade, ada, wid)
    await facade.backups.pause(ada, backup_id)
    assert (await facade.backups.get(ada, backup_id)).next_drill_at is None
    clock.advance(timedelta(hours=3))
    assert await facade.drills.schedule_due() == DrillScheduleReport()
    resumed = await facade.backups.resume(ada, backup_id)
    assert resumed.next_drill_at is not None
    assert resumed.next_drill_at > clock.now()
    stopped = await facade.backups.update(ada, backup_id, BackupChanges(drill=None))
    assert (stopped.drill, stopped.next_drill_at) == (None, None)


@pytest.mark.parametrize("kind", [BackupKind.LOCAL, BackupKind.MANUAL])
async def test_drill_is_refused_on_a_local_or_manual_backup(
    facade: Strongroom, kind: BackupKind
) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    with pytest.raises(ValidationFailedError, match="drill"):
        await facade.backups.create(ada, wid, "Mine", kind, drill=HOURLY)
    backup = await facade.backups.create(ada, wid, "Mine", kind)
    with pytest.raises(ValidationFailedError, match="drill"):
        await facade.backups.update(ada, backup.id, BackupChanges(drill=HOURLY))


async def test_a_target_the_service_does_not_own_is_refused(facade: Strongroom) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    elsewhere = DrillPolicy(HOURLY.schedule, DrillTarget("postgres"))
    with pytest.raises(ValidationFailedError, match=r"drill\.target"):
        await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD, drill=elsewhere)
