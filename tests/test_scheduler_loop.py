"""The scheduler inside ``serve`` and alone as ``strongroom scheduler``, and the in-process
wake-ups of waiting claims.

- ``serve``: a ``scheduler`` task lives exactly as long as the serving facade
  (``STRONGROOM_SCHEDULER_INTERVAL=0``: none); the loop survives a failing pass.
- ``strongroom scheduler``: a real process on the SQLite default queues the run of a due
  slot, and stops cleanly (exit 0) on SIGTERM and on SIGINT.
- ``InProcessRunSignals``: a ticket is woken by an announcement for its worker only (the
  service's by one for no worker), also from another thread's loop and as heard from
  another process, and an announcement before the wait is not lost.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast
from uuid import UUID, uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.signals import InProcessRunSignals, notice
from strongroom.domain.backups import BackupChanges, BackupKind, Schedule
from strongroom.entrypoints.service import (
    open_facade,
    open_serving_facade,
    run_scheduler_every,
)
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom
from support.people import retention, workspace_admin
from support.serve_process import STRONGROOM, unconfigured_environment

SECRET_KEY = "scheduler-loop-tests-secret-key-0123456789"


class CountingScheduler:
    """Counts passes; the second one fails, as a database outage would."""

    def __init__(self) -> None:
        self.passes = 0
        self.ran = asyncio.Event()

    async def run_due(self) -> None:
        self.passes += 1
        if self.passes >= 3:
            self.ran.set()
        if self.passes == 2:
            raise RuntimeError("database is down")


def _scheduler_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == "scheduler"}


class TestServeLoop:
    """The scheduler's loop inside ``serve``."""

    def test_the_loop_runs_repeatedly_and_survives_a_failure(self) -> None:
        """Three passes despite the second failing."""

        async def scenario() -> int:
            scheduler = CountingScheduler()
            facade = cast(Strongroom, SimpleNamespace(scheduler=scheduler))
            task = asyncio.create_task(run_scheduler_every(facade, 0.01))
            await asyncio.wait_for(scheduler.ran.wait(), 5)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return scheduler.passes

        assert asyncio.run(scenario()) >= 3

    def test_the_serving_facade_runs_the_loop_unless_turned_off(self, tmp_path: Path) -> None:
        """A ``scheduler`` task inside the block, gone after it; none with interval 0."""

        async def scenario(interval: float) -> tuple[int, int]:
            settings = Settings(data_dir=tmp_path / str(interval), scheduler_interval=interval)
            async with open_serving_facade(settings):
                inside = len(_scheduler_tasks())
            return inside, len(_scheduler_tasks())

        assert asyncio.run(scenario(10)) == (1, 0)
        assert asyncio.run(scenario(0)) == (0, 0)

    def test_the_interval_is_read_from_the_environment_and_checked(self) -> None:
        """``STRONGROOM_SCHEDULER_INTERVAL`` (default 5 s); a negative one is refused."""
        assert Settings.from_env({}).scheduler_interval == 5
        env = {"STRONGROOM_SCHEDULER_INTERVAL": "0.5"}
        assert Settings.from_env(env).scheduler_interval == 0.5
        with pytest.raises(ValueError, match="STRONGROOM_SCHEDULER_INTERVAL"):
            Settings.from_env({"STRONGROOM_SCHEDULER_INTERVAL": "-1"})


def _due_backup(data_dir: Path) -> str:
    """A workspace on the SQLite default with one local backup whose slot is already due;
    the backup's id."""
    settings = Settings(data_dir=data_dir, secret_key=SECRET_KEY)

    async def make() -> str:
        async with open_facade(settings) as facade:
            admin, workspace_id = await workspace_admin(facade, "ops@example.com")
            worker = await facade.workers.create(admin, "rack")
            created = await facade.backups.create(admin, workspace_id, "B", BackupKind.LOCAL)
            changes = BackupChanges(
                worker_id=worker.worker.id,
                retention=retention("P30D", "PT0S"),
                schedule=Schedule("0 0 1 1 *", "UTC"),
            )
            await facade.backups.update(admin, created.id, changes)
            return str(created.id)

    backup_id = asyncio.run(make())
    with sqlite3.connect(data_dir / "strongroom.db") as connection:
        connection.execute(
            "UPDATE backups SET next_run_at = '2020-01-01T00:00:00.000000Z' WHERE id = ?",
            (backup_id,),
        )
    return backup_id


def _runs(data_dir: Path, backup_id: str) -> list[tuple[str, str]]:
    with sqlite3.connect(data_dir / "strongroom.db") as connection:
        return connection.execute(
            "SELECT state, trigger FROM runs WHERE backup_id = ?", (backup_id,)
        ).fetchall()


class TestSchedulerCommand:
    """``strongroom scheduler`` as a process of its own."""

    @pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
    def test_it_queues_due_slots_and_stops_cleanly(
        self, tmp_path: Path, stop: signal.Signals
    ) -> None:
        """The due slot gives one queued ``schedule`` run; the stop signal ends the
        process with status 0."""
        data_dir = tmp_path / "data"
        backup_id = _due_backup(data_dir)
        environment = unconfigured_environment() | {
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
            "STRONGROOM_SCHEDULER_INTERVAL": "0.2",
        }
        process = subprocess.Popen(
            [str(STRONGROOM), "scheduler", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environment,
        )
        try:
            deadline = time.monotonic() + 30
            while not _runs(data_dir, backup_id) and time.monotonic() < deadline:
                assert process.poll() is None
                time.sleep(0.1)
            process.send_signal(stop)
            output, _ = process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, output.decode()
        assert _runs(data_dir, backup_id) == [("queued", "schedule")]


class TestInProcessSignals:
    """Tickets and announcements within one process."""

    def test_a_ticket_wakes_for_its_worker_only(self) -> None:
        """Another worker's announcement (in its workspace or another) and the service's
        leave it waiting; its own wakes it, even when it came before the wait (between
        the claim's look and its wait)."""

        async def scenario() -> tuple[bool, bool, bool]:
            signals = InProcessRunSignals()
            mine, theirs, rack, other = uuid4(), uuid4(), uuid4(), uuid4()
            ticket = signals.watch(mine, rack)
            signals.announce(mine, other)
            signals.announce(theirs, rack)
            signals.announce(mine, None)
            unwoken = await ticket.wait(0.05)
            signals.announce(mine, rack)
            woken = await ticket.wait(5)
            ticket.close()
            return unwoken, woken, signals.waiting() == 0

        assert asyncio.run(scenario()) == (False, True, True)

    def test_the_services_ticket_wakes_for_the_services_work_in_any_workspace(self) -> None:
        """``watch_any`` (the service executor's, the restore runner's ticket) is woken by
        an announcement for no worker in any workspace, never by a worker's."""

        async def scenario() -> tuple[bool, bool, bool, bool]:
            signals = InProcessRunSignals()
            mine, theirs, rack = uuid4(), uuid4(), uuid4()
            anyone, ticket = signals.watch_any(), signals.watch(mine, rack)
            signals.announce(mine, rack)
            unwoken = await anyone.wait(0.05)
            woken_worker = await ticket.wait(5)
            signals.announce(theirs, None)
            woken = await anyone.wait(5)
            anyone.close()
            ticket.close()
            return unwoken, woken_worker, woken, signals.waiting() == 0

        assert asyncio.run(scenario()) == (False, True, True, True)

    def test_a_bare_workspace_id_from_another_process_wakes_all_of_that_workspace(
        self,
    ) -> None:
        """What an earlier version notifies (the workspace id alone) wakes every ticket of
        that workspace and the service's, no other workspace's; a malformed one none."""

        async def scenario() -> list[bool]:
            signals = InProcessRunSignals()
            mine, theirs = uuid4(), uuid4()
            tickets = [
                signals.watch(mine, uuid4()),
                signals.watch(mine, uuid4()),
                signals.watch_any(),
                signals.watch(theirs, uuid4()),
            ]
            signals.hear("not a uuid")
            signals.hear(f"{mine}:not a uuid")
            signals.hear(str(mine))
            woken = [await ticket.wait(0.05) for ticket in tickets]
            for ticket in tickets:
                ticket.close()
            return woken

        assert asyncio.run(scenario()) == [True, True, True, False]

    @given(st.uuids(), st.uuids(), st.booleans())
    @settings(max_examples=25, deadline=None)
    def test_a_notice_heard_wakes_what_the_announcement_wakes(
        self, workspace_id: UUID, worker_id: UUID, service: bool
    ) -> None:
        """Across processes (``notice`` sent, ``hear`` on the other side) an announcement
        wakes the same tickets as within one."""
        named = None if service else worker_id

        async def scenario() -> list[bool]:
            signals = InProcessRunSignals()
            tickets = [
                signals.watch(workspace_id, worker_id),
                signals.watch_any(),
                signals.watch(workspace_id, uuid4()),
            ]
            signals.hear(notice(workspace_id, named))
            woken = [await ticket.wait(0.01) for ticket in tickets]
            for ticket in tickets:
                ticket.close()
            return woken

        assert asyncio.run(scenario()) == [not service, service, False]

    def test_an_announcement_from_another_thread_wakes_a_waiter(self) -> None:
        """The waiter's loop is woken by an announcement made on another thread."""
        signals = InProcessRunSignals()
        workspace_id, worker_id = uuid4(), uuid4()
        watching = threading.Event()

        async def wait() -> bool:
            ticket = signals.watch(workspace_id, worker_id)
            watching.set()
            try:
                return await ticket.wait(10)
            finally:
                ticket.close()

        result: list[bool] = []
        waiter = threading.Thread(target=lambda: result.append(asyncio.run(wait())))
        waiter.start()
        assert watching.wait(5)
        began = time.monotonic()
        signals.announce(workspace_id, worker_id)
        waiter.join(10)
        assert result == [True]
        assert time.monotonic() - began < 5
