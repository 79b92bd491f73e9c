"""Restore leases (contract 11): a restore left ``running`` by a runner that died is queued
again when its lease runs out, up to three attempts, then failed as interrupted; a live
runner renews its lease as it streams; a runner whose restore was taken from it stops and
records nothing. On the in-memory adapters with a recording target (a SIGKILLed
``strongroom executor`` is in tests/integration/test_restore_leases_process.py)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.restores import RestoreRunner
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.backups import S3Source
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.domain.restores import MAX_RESTORE_ATTEMPTS, RESTORE_LEASE, Restore, RestoreState
from strongroom.ports.driving import Strongroom
from support.people import audit_events, workspace_admin
from support.restores import RecordingTargets, cloud_backup, confirmed_artifact
from support.world import memory_facade

SOURCE = S3Source(endpoint="https://s3.example.com", bucket="source")
TARGET = S3Source(endpoint="https://s3.example.net", bucket="restored", prefix="again/")
KEYS = {"access_key_id": "target-key", "secret_access_key": "target-secret-xyz"}
PAST_THE_LEASE = RESTORE_LEASE + timedelta(seconds=1)


@pytest.fixture
def targets() -> RecordingTargets:
    return RecordingTargets()


@pytest.fixture
def facade(clock: ManualClock, storage: LocalDiskStorage, targets: RecordingTargets) -> Strongroom:
    return memory_facade(clock, storage=storage, restore_targets=targets)


async def queued_restore(facade: Strongroom) -> tuple[Caller, Restore]:
    """An admin and a queued restore of a confirmed s3 artifact."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    backup = await cloud_backup(facade, ada, SOURCE)
    artifact = await confirmed_artifact(facade, ada, backup.id, b"archive bytes")
    return ada, await facade.restores.create(ada, artifact.id, TARGET, KEYS)


async def taken_by_a_runner_that_dies(facade: Strongroom) -> Restore:
    """What a runner commits before it streams (the restore ``running`` on its lease),
    and then nothing more: the runner was killed."""
    async with facade.deps.uow() as uow:
        queued = await uow.restores.next_queued()
        assert queued is not None
        running = queued.start(facade.deps.clock.now())
        await uow.restores.update(running)
        await uow.commit()
    return running


async def test_a_restore_whose_runner_died_runs_again_once_its_lease_ran_out(
    facade: Strongroom, clock: ManualClock, targets: RecordingTargets
) -> None:
    """Within the lease nobody touches it; after, the next runner queues it again as
    attempt 2 (``restore.requeue`` by ``system``) and restores it."""
    ada, restore = await queued_restore(facade)
    await taken_by_a_runner_that_dies(facade)
    assert await RestoreRunner(facade.restores).run_queued() == []
    assert (await facade.restores.get(ada, restore.id)).state is RestoreState.RUNNING
    assert targets.restored == []
    clock.advance(PAST_THE_LEASE)
    (done,) = await RestoreRunner(facade.restores).run_queued()
    assert (done.id, done.state, done.attempt, done.error) == (
        restore.id,
        RestoreState.SUCCEEDED,
        2,
        None,
    )
    assert done.lease_expires_at is None
    assert [target for target, _, _ in targets.restored] == [TARGET]
    (event,) = await audit_events(facade, ada, "restore.requeue")
    assert event.actor == SYSTEM_ACTOR
    assert event.changes is not None
    assert "secret" not in str(event.changes)


async def test_after_the_last_attempt_it_fails_as_interrupted(
    facade: Strongroom, clock: ManualClock, targets: RecordingTargets
) -> None:
    """Every runner dies: queued again twice, then ``failed`` saying it was interrupted,
    its credentials erased."""
    ada, restore = await queued_restore(facade)
    for attempt in range(1, MAX_RESTORE_ATTEMPTS + 1):
        taken = await taken_by_a_runner_that_dies(facade)
        assert taken.attempt == attempt
        clock.advance(PAST_THE_LEASE)
        assert await facade.restores.expire_leases() == 1
    failed = await facade.restores.get(ada, restore.id)
    assert (failed.state, failed.attempt) == (RestoreState.FAILED, MAX_RESTORE_ATTEMPTS)
    assert failed.error is not None
    assert failed.error.startswith("interrupted")
    assert failed.sealed_credentials is None
    assert failed.finished_at == clock.now()
    assert await RestoreRunner(facade.restores).run_queued() == []
    assert targets.restored == []
    assert len(await audit_events(facade, ada, "restore.requeue")) == 2
    (finish,) = await audit_events(facade, ada, "restore.finish")
    assert finish.actor == SYSTEM_ACTOR


async def test_a_live_runner_renews_its_lease(
    facade: Strongroom, clock: ManualClock, targets: RecordingTargets
) -> None:
    """A restore streaming far longer than its lease is never taken from its runner."""
    ada, restore = await queued_restore(facade)
    lease = timedelta(seconds=0.4)
    targets.hold = asyncio.Event()
    runner = asyncio.create_task(RestoreRunner(facade.restores).run_next(lease))
    await asyncio.wait_for(targets.started.wait(), 5)
    for _ in range(8):  # 0.8 s of the service's clock: twice the lease
        clock.advance(timedelta(seconds=0.1))
        await asyncio.sleep(0.15)  # a renewal every 0.1 s
        assert await facade.restores.expire_leases() == 0
    targets.hold.set()
    done = await asyncio.wait_for(runner, 5)
    assert done is not None
    assert (done.state, done.attempt) == (RestoreState.SUCCEEDED, 1)
    assert len(targets.restored) == 1
    assert (await facade.restores.get(ada, restore.id)).state is RestoreState.SUCCEEDED


async def test_a_runner_whose_restore_was_taken_from_it_stops_and_records_nothing(
    facade: Strongroom, clock: ManualClock, targets: RecordingTargets
) -> None:
    """A runner frozen past its lease: its restore is queued again; at its next renewal
    it stops streaming and leaves the restore to the next attempt."""
    ada, restore = await queued_restore(facade)
    lease = timedelta(seconds=2)
    targets.hold = asyncio.Event()
    runner = asyncio.create_task(RestoreRunner(facade.restores).run_next(lease))
    await asyncio.wait_for(targets.started.wait(), 5)
    clock.advance(timedelta(seconds=3))
    assert await facade.restores.expire_leases() == 1
    given_up = await asyncio.wait_for(runner, 5)
    assert given_up is not None
    assert (given_up.state, given_up.attempt) == (RestoreState.QUEUED, 2)
    assert targets.restored == []
    targets.hold.set()
    (done,) = await RestoreRunner(facade.restores).run_queued()
    assert (done.state, done.attempt) == (RestoreState.SUCCEEDED, 2)
    assert (await audit_events(facade, ada, "restore.finish"))[0].changes is not None
    assert (await facade.restores.get(ada, restore.id)).finished
