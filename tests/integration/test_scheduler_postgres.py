"""The scheduler and the claim wake-ups on PostgreSQL (contract 11).

- Several scheduler instances, each on its own pool, running at the same time: exactly one
  run per slot, across slot boundaries and a DST change.
- Two schedulers, two worker claimers and two service executors for a simulated stretch
  of minute schedules on 100 backups, half of them a worker's and half cloud backups:
  exactly one run per slot, no run claimed or executed twice. 16 simulated minutes around
  New York's fall-back change by default; the whole day with ``STRONGROOM_FULL_DAY=1``.
- LISTEN/NOTIFY: a claim waiting on one instance is woken by a run queued on another (the
  periodic re-check pushed out of reach, so only the notification can answer it), not by
  a rolled-back one, and again after its listening connection was killed.
- Two ``strongroom serve`` processes: a claim long-polling on one is answered promptly
  after a trigger on the other.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from integration_world import SECRET_KEY, expect, new_tenant, postgres_url, setup_facade
from scheduling_world import (
    MINUTE,
    CountingReaders,
    claims_per_run,
    events_per_run,
    executing,
    fleet,
    instances,
    minute_by_minute,
    slots,
    stored_runs,
)

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.sql.listen import PostgresRunSignals
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import Schedule
from strongroom.domain.runs import RunTrigger
from strongroom.ports.driving import claims
from support.postgres import PostgresServer, scratch_database
from support.serve_process import free_port, serving
from support.world import bearer

EVERY_MINUTE_UTC = Schedule("* * * * *", "UTC")
EVERY_MINUTE_NEW_YORK = Schedule("* * * * *", "America/New_York")
# New York falls back on 2026-11-01 at 06:00 UTC: local 01:00-01:59 comes twice, and a
# minute schedule runs only its first occurrence (05:00-05:59 UTC), none in 06:00-06:59.
FALL_BACK = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)


@pytest.fixture
def conninfo(pg_server: PostgresServer) -> Iterator[str]:
    """A migrated database of the test's own (the scheduler looks at every workspace)."""
    with scratch_database(pg_server, prefix="strongroom_sched") as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        yield conninfo


async def until(condition: Callable[[], bool], timeout: float = 10) -> None:
    """Wait until ``condition`` holds (fails after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.01)


def check_one_run_per_slot(conninfo: str, scenario: Any, start: datetime, end: datetime) -> None:
    """Every backup has one succeeded first-attempt run at each slot of its schedule in
    ``(start, end]``, and nothing else; every run was claimed exactly once."""
    stored = stored_runs(conninfo, scenario.workspace_id)
    for backup_id, schedule in scenario.backups.items():
        expected = [(slot, "succeeded", 1) for slot in slots(schedule, start, end)]
        assert stored.get(backup_id, []) == expected, backup_id
    claimed = claims_per_run(conninfo, scenario.workspace_id)
    assert len(claimed) == sum(len(runs) for runs in stored.values())
    assert set(claimed.values()) == {1}


def check_executions(conninfo: str, scenario: Any, readers: CountingReaders) -> None:
    """Every run confirmed once; every cloud run's source read once and its one artifact
    available, the pausing backups' runs with a heartbeat's progress; no worker's run has
    an artifact."""
    with psycopg.connect(conninfo, autocommit=True) as connection:
        runs = connection.execute(
            "SELECT r.id, r.backup_id, r.created_at, r.progress IS NOT NULL,"
            " count(a.id) FILTER (WHERE a.state = 'available'), count(a.id)"
            " FROM runs r LEFT JOIN artifacts a ON a.run_id = r.id"
            " WHERE r.workspace_id = %s GROUP BY r.id",
            (scenario.workspace_id,),
        ).fetchall()
    confirmed = events_per_run(conninfo, scenario.workspace_id, "run.confirm")
    assert len(confirmed) == len(runs)
    assert set(confirmed.values()) == {1}
    cloud = [run for run in runs if run[1] in scenario.cloud]
    assert cloud
    assert len(cloud) * 2 == len(runs)  # as many runs of each kind
    assert readers.reads == {(backup_id, created): 1 for _, backup_id, created, *_ in cloud}
    for run_id, backup_id, _, heartbeat, available, artifacts in runs:
        if backup_id in scenario.cloud:
            assert (available, artifacts) == (1, 1), run_id
            if backup_id in readers.pausing:
                assert heartbeat, run_id
        else:
            assert artifacts == 0, run_id


def simulate(conninfo: str, objects: Path, backups: int, start: datetime, minutes: int) -> float:
    """Two instances over ``minutes`` of minute schedules (half UTC, half New York; half
    of each a worker's, half cloud backups), each with a scheduler, a worker claimer and a
    service executor (two runs at once, as ``serve`` by default), the database vacuumed
    every simulated hour; checks one run per slot, each claimed, read and confirmed once;
    the seconds it took."""

    async def scenario() -> tuple[float, Any, CountingReaders]:
        clock = ManualClock(start)
        async with instances(conninfo, 2, clock, objects) as facades:
            schedules = [EVERY_MINUTE_UTC, EVERY_MINUTE_NEW_YORK] * (backups // 4)
            made = await fleet(facades[0], schedules, cloud=schedules)
            pausing = frozenset(sorted(made.cloud)[:4])
            readers = CountingReaders(clock, pausing, pause=0.1)
            began = time.monotonic()
            async with executing(facades, readers, concurrency=2, heartbeat=0.03) as executors:
                scheduled, finished = await minute_by_minute(
                    facades, clock, made.worker, minutes, executors, 30, conninfo
                )
            took = time.monotonic() - began
        assert scheduled == finished
        return took, made, readers

    took, made, readers = asyncio.run(scenario())
    check_one_run_per_slot(conninfo, made, start, start + minutes * MINUTE)
    check_executions(conninfo, made, readers)
    return took


class TestManySchedulers:
    """Exactly one run per slot, whatever the number of instances."""

    def test_three_schedulers_at_once_give_one_run_per_slot(self, conninfo: str) -> None:
        """Three instances over 60 backups for 5 slot boundaries (each minute, all at
        once, in batches small enough to interleave)."""

        async def scenario() -> None:
            start = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)
            clock = ManualClock(start)
            async with instances(conninfo, 3, clock) as facades:
                made = await fleet(facades[0], [EVERY_MINUTE_UTC] * 60)
                for _ in range(5):
                    clock.advance(MINUTE)
                    reports = await asyncio.gather(
                        *(f.scheduler.run_due(batch=8) for f in facades for _ in range(2))
                    )
                    assert sum(r.scheduled for r in reports) == 60
                    while (claimed := await facades[1].claims.claim(made.worker)) is not None:
                        await facades[2].artifacts.confirm(made.worker, claimed.run.id)
            check_one_run_per_slot(conninfo, made, start, start + 5 * MINUTE)

        asyncio.run(scenario())

    @pytest.mark.slow
    def test_two_schedulers_two_claimers_and_two_executors_across_a_dst_change(
        self, conninfo: str, tmp_path: Path
    ) -> None:
        """100 backups, half in New York, for the 16 minutes around its fall-back (New
        York's slots stop at 06:00 UTC for the repeated hour); the whole day, both ends
        of the repeated hour included, with ``STRONGROOM_FULL_DAY=1`` (its first
        ``STRONGROOM_SIMULATED_MINUTES`` only, when set; progress printed every 30).

        The cloud backups' source is a counting fake of the source port (a few bytes per
        run): what is under test is the lifecycle around it (the real claim, lease,
        heartbeat and confirm, artifacts written to a local-disk destination); the real
        S3 and pg_dump readers are proven end to end in test_backup_restore_e2e.py and
        test_cloud_executor.py."""
        if os.environ.get("STRONGROOM_FULL_DAY") == "1":
            start, minutes = datetime(2026, 11, 1, 0, 0, tzinfo=UTC), 1440
        else:
            start, minutes = FALL_BACK - timedelta(minutes=8), 16
        minutes = int(os.environ.get("STRONGROOM_SIMULATED_MINUTES") or minutes)
        took = simulate(conninfo, tmp_path / "objects", 100, start, minutes)
        print(f"\nsimulated {minutes} minutes of 100 minute schedules in {took:.1f} s")


class TestWakeUps:
    """LISTEN/NOTIFY wakes claims waiting on another instance."""

    def test_a_claim_waiting_on_one_instance_is_woken_by_a_run_queued_on_another(
        self, conninfo: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With the re-check beyond the wait, only the notification can answer: a trigger
        and a scheduled slot on B wake claims on A; a rolled-back announcement does not;
        after A's listening connection is killed, it reconnects and wakes again."""
        monkeypatch.setattr(claims, "SWEEP_SECONDS", 60.0)

        async def scenario() -> None:
            clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
            async with instances(conninfo, 2, clock) as (a, b):
                made = await fleet(a, [EVERY_MINUTE_UTC, EVERY_MINUTE_UTC])
                first, second = made.backups
                signals = a.deps.signals
                assert isinstance(signals, PostgresRunSignals)

                async def waiting_claim() -> asyncio.Task[Any]:
                    task = asyncio.create_task(a.claims.claim(made.worker, wait_seconds=30))
                    await until(signals.listening.is_set)
                    await asyncio.sleep(0.2)
                    assert not task.done()
                    return task

                task = await waiting_claim()
                run = await b.runs.trigger(made.admin, first)
                claimed = await asyncio.wait_for(task, 10)
                assert claimed is not None
                assert claimed.run.id == run.id

                task = await waiting_claim()
                async with b.deps.uow() as uow:  # announced, never committed
                    await uow.runs.announce_queued(made.workspace_id, made.worker.worker_id)
                await asyncio.sleep(0.5)
                assert not task.done()
                clock.advance(MINUTE)
                await b.scheduler.run_due()
                claimed = await asyncio.wait_for(task, 10)
                assert claimed is not None
                assert claimed.run.trigger is RunTrigger.SCHEDULE

                with psycopg.connect(conninfo, autocommit=True) as connection:
                    connection.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = 'strongroom-listen'"
                        " AND datname = current_database()"
                    )
                await until(lambda: not signals.listening.is_set())
                await until(signals.listening.is_set)
                task = await waiting_claim()
                run = await b.runs.trigger(made.admin, second)
                claimed = await asyncio.wait_for(task, 10)
                assert claimed is not None
                assert claimed.run.id == run.id

        asyncio.run(scenario())

    def test_two_serve_processes_a_claim_on_one_answered_after_a_trigger_on_the_other(
        self, conninfo: str, tmp_path: Path
    ) -> None:
        """Process A holds a long poll; process B takes a trigger (202); A answers 201
        with that run, promptly (the figure is printed; the bench measures it)."""
        configuration = {
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
            "STRONGROOM_SCHEDULER_INTERVAL": "0",
        }
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            facade = setup_facade(database)
            with (
                serving(tmp_path / "a", free_port(), tmp_path / "a.log", configuration) as url_a,
                serving(tmp_path / "b", free_port(), tmp_path / "b.log", configuration) as url_b,
                httpx2.Client(base_url=url_a, trust_env=False, timeout=40) as client_a,
                httpx2.Client(base_url=url_b, trust_env=False, timeout=10) as client_b,
            ):
                tenant = new_tenant(client_b, facade)
                worker = expect(
                    client_b.post("/v1/workers", json={"name": "rack"}, headers=tenant.headers),
                    201,
                )
                created = expect(
                    client_b.post(
                        tenant.backups_path,
                        json={"name": "Local", "kind": "local"},
                        headers=tenant.headers,
                    ),
                    201,
                )
                expect(
                    client_b.patch(
                        f"/v1/backups/{created['id']}",
                        json={
                            "worker_id": worker["id"],
                            "retention": {"expire_after": "P30D", "lock_for": "PT0S"},
                        },
                        headers=tenant.headers,
                    ),
                    200,
                )
                answered: dict[str, Any] = {}

                def long_poll() -> None:
                    answer = client_a.post(
                        "/v1/claims", json={"wait_seconds": 30}, headers=bearer(worker["token"])
                    )
                    answered["at"] = time.monotonic()
                    answered["answer"] = answer

                poller = threading.Thread(target=long_poll)
                poller.start()
                time.sleep(1.5)  # the claim waits (and A's listening connection is up)
                assert poller.is_alive()
                triggered = client_b.post(
                    f"/v1/backups/{created['id']}/trigger", headers=tenant.headers
                )
                triggered_at = time.monotonic()
                run = expect(triggered, 202)
                poller.join(30)
                answer = answered["answer"]
                assert expect(answer, 201)["run"]["id"] == run["id"]
                latency = answered["at"] - triggered_at
                print(f"\nclaim answered {latency * 1000:.0f} ms after the trigger's 202")
                assert latency < 5  # promptly: nowhere near the 30 s wait
