"""Restore drills at the use-case layer (contract 16): what a drill is asked for on, and a
drill left running by a runner that stopped, failed as interrupted after DRILL_TIMEOUT."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.drills import DrillRunner
from strongroom.domain.backups import BackupChanges, BackupKind, S3Source
from strongroom.domain.drills import DRILL_TIMEOUT, INTERRUPTED, Drill, DrillState
from strongroom.domain.errors import ValidationFailedError
from strongroom.domain.pagination import PageRequest
from strongroom.ports.driving import Strongroom
from support.people import audit_events, workspace_admin

SOURCE = BackupChanges(
    source=S3Source("https://s3.example.com", "src"),
    credentials={"access_key_id": "AKIA", "secret_access_key": "secret"},
)


async def test_a_drill_left_running_is_failed_as_interrupted(
    facade: Strongroom, clock: ManualClock
) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup = await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD)
    await facade.backups.update(ada, backup.id, SOURCE)
    running = Drill.queued(uuid4(), wid, backup.id, clock.now()).started(uuid4(), clock.now())
    async with facade.deps.uow() as uow:
        await uow.drills.add(running)
        await uow.commit()
    runner = DrillRunner(facade.drills)

    clock.advance(DRILL_TIMEOUT)
    assert await runner.run_queued() == []
    listed = await facade.drills.list_for_backup(ada, backup.id, PageRequest(5))
    assert [d.state for d in listed.items] == [DrillState.RUNNING]

    clock.advance(timedelta(seconds=1))
    await runner.run_queued()
    (drill,) = (await facade.drills.list_for_backup(ada, backup.id, PageRequest(5))).items
    assert (drill.state, drill.error) == (DrillState.FAILED, INTERRUPTED)
    assert drill.finished_at == clock.now()
    (event,) = await audit_events(facade, ada, "drill.finish")
    assert event.target_id == str(drill.id)


async def test_a_drill_with_nothing_to_restore_fails_saying_so(facade: Strongroom) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup = await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD)
    await facade.backups.update(ada, backup.id, SOURCE)
    asked = await facade.drills.create(ada, backup.id)
    (done,) = await DrillRunner(facade.drills).run_queued()
    assert done.id == asked.id
    assert (done.state, done.error) == (
        DrillState.FAILED,
        "the backup has no available artifact to drill",
    )


async def test_a_cloud_backup_without_a_source_is_refused(facade: Strongroom) -> None:
    ada, wid = await workspace_admin(facade, "ada@example.com")
    backup = await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD)
    with pytest.raises(ValidationFailedError, match="no s3 or postgres source"):
        await facade.drills.create(ada, backup.id)
