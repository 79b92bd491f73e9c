"""The service executor is woken by the run signals (contract 11): a trigger, a scheduled
slot and a requeue start a cloud run at once, not at the executor's next periodic look
(pushed out of reach here: an hour)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any
from uuid import UUID

from test_service_executor import FakeReaders, cloud_backup

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.executor import Executor
from strongroom.domain.backups import BackupChanges, Schedule
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import RunState, RunTrigger
from strongroom.ports.driving import Strongroom
from support.people import workspace_admin

HOUR = 3600.0
PROMPTLY = 0.5  # seconds: far below the poll; a wake-up takes milliseconds


@asynccontextmanager
async def running(facade: Strongroom, readers: FakeReaders) -> AsyncIterator[Executor]:
    """An executor polling once an hour, running until the block ends."""
    executor = Executor(
        facade.service_runs, readers, concurrency=2, poll=HOUR, heartbeat_every=HOUR
    )
    stop = asyncio.Event()
    task = asyncio.create_task(executor.run(stop))
    await asyncio.sleep(0.05)  # its first look found nothing; it waits
    try:
        yield executor
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def started_within(
    facade: Strongroom, queue: Callable[[], Coroutine[Any, Any, UUID]], readers: FakeReaders
) -> tuple[UUID, float]:
    """Queue a run with ``queue``; the run and how long until the executor read its source."""
    readers.reading.clear()
    began = time.monotonic()
    run_id = await queue()
    await asyncio.wait_for(readers.reading.wait(), PROMPTLY)
    return run_id, time.monotonic() - began


async def test_a_trigger_starts_the_run_at_once(facade: Strongroom) -> None:
    """The executor's next look is an hour away; the triggered run is read at once and
    succeeds."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    backup_id = await cloud_backup(facade, ada)
    readers = FakeReaders(b"dump")
    async with running(facade, readers):

        async def trigger() -> UUID:
            return (await facade.runs.trigger(ada, backup_id)).id

        run_id, latency = await started_within(facade, trigger, readers)
        for _ in range(100):
            run = await facade.runs.get(ada, run_id)
            if run.finished:
                break
            await asyncio.sleep(0.01)
        assert run.state is RunState.SUCCEEDED
    print(f"\ntriggered run read {latency * 1000:.1f} ms after the trigger")


async def test_a_scheduled_slot_starts_the_run_at_once(
    facade: Strongroom, clock: ManualClock
) -> None:
    """The scheduler queues a slot: the executor takes it at once."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    backup_id = await cloud_backup(facade, ada)
    schedule = BackupChanges(schedule=Schedule("* * * * *", "UTC"))
    await facade.backups.update(ada, backup_id, schedule)
    readers = FakeReaders(b"dump")
    async with running(facade, readers):

        async def slot() -> UUID:
            clock.advance(timedelta(minutes=1))
            report = await facade.scheduler.tick()
            assert report.scheduled == 1
            (run,) = (await facade.runs.list_for_backup(ada, backup_id, None, PageRequest(5))).items
            return run.id

        run_id, _ = await started_within(facade, slot, readers)
        assert (await facade.runs.get(ada, run_id)).trigger is RunTrigger.SCHEDULE


async def test_a_requeued_run_starts_again_at_once(facade: Strongroom, clock: ManualClock) -> None:
    """A run whose lease ran out (its executor gone) is requeued by the lease job: the
    waiting executor takes it up at once."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    backup_id = await cloud_backup(facade, ada)
    run = await facade.runs.trigger(ada, backup_id)
    lost = await facade.service_runs.claim()  # an executor that then died
    assert lost is not None
    readers = FakeReaders(b"dump")
    async with running(facade, readers):

        async def requeue() -> UUID:
            clock.advance(timedelta(minutes=5))
            assert (await facade.leases.expire()).requeued == 1
            return run.id

        await started_within(facade, requeue, readers)
        assert (await facade.runs.get(ada, run.id)).attempt == 2
