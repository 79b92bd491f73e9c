"""The service executor's wake-up across processes on PostgreSQL (contract 11): a ticket
for any workspace (``watch_any``) on instance A is woken by a run triggered on instance B,
through LISTEN/NOTIFY, long before any poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from scheduling_world import instances

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.sql.listen import PostgresRunSignals
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import S3Source
from support.people import workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.restores import cloud_backup, confirmed_artifact


@pytest.fixture
def conninfo(pg_server: PostgresServer) -> Iterator[str]:
    """A migrated database of the test's own."""
    with scratch_database(pg_server, prefix="strongroom_wake") as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        yield conninfo


def test_an_executor_ticket_on_one_instance_is_woken_by_a_trigger_on_another(
    conninfo: str,
) -> None:
    """A's executor ticket waits; B triggers a cloud run; A's ticket fires promptly."""

    async def scenario() -> float:
        clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
        async with instances(conninfo, 2, clock) as (a, b):
            admin, _ = await workspace_admin(a, "ops@example.com")
            backup = await cloud_backup(b, admin, S3Source("https://s3.example.com", "data"))
            signals = a.deps.signals
            assert isinstance(signals, PostgresRunSignals)
            a.service_runs.wakeup().close()  # the first ticket starts A's listening
            deadline = time.monotonic() + 10
            while not signals.listening.is_set():
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            # Taken once listening (coming up, the listener wakes every ticket: a run may
            # have been queued while nobody listened).
            ticket = a.service_runs.wakeup()
            try:
                assert not await ticket.wait(0.2)
                began = time.monotonic()
                await b.runs.trigger(admin, backup.id)
                assert await ticket.wait(10)
                return time.monotonic() - began
            finally:
                ticket.close()

    latency = asyncio.run(scenario())
    print(f"\nexecutor ticket woken {latency * 1000:.0f} ms after the trigger on another instance")
    assert latency < 2


def test_a_restore_runner_ticket_on_one_instance_is_woken_by_a_restore_on_another(
    conninfo: str,
) -> None:
    """A's restore runner waits on its ticket; B is asked for a restore; A's ticket fires
    promptly (the restore's transaction NOTIFYs on the runs' channel at commit)."""

    async def scenario() -> float:
        clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
        async with instances(conninfo, 2, clock) as (a, b):
            admin, _ = await workspace_admin(a, "ops@example.com")
            backup = await cloud_backup(b, admin, S3Source("https://s3.example.com", "data"))
            artifact = await confirmed_artifact(b, admin, backup.id, b"archive")
            signals = a.deps.signals
            assert isinstance(signals, PostgresRunSignals)
            a.restores.wakeup().close()  # the first ticket starts A's listening
            deadline = time.monotonic() + 10
            while not signals.listening.is_set():
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            ticket = a.restores.wakeup()
            try:
                assert not await ticket.wait(0.2)
                began = time.monotonic()
                target = S3Source("https://s3.example.net", "restored")
                keys = {"access_key_id": "k", "secret_access_key": "s"}
                await b.restores.create(admin, artifact.id, target, keys)
                assert await ticket.wait(10)
                return time.monotonic() - began
            finally:
                ticket.close()

    latency = asyncio.run(scenario())
    print(f"\nrestore runner woken {latency * 1000:.0f} ms after the restore on another instance")
    assert latency < 2
