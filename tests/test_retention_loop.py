"""The retention job on an interval inside ``serve`` (``run_retention_every``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

from strongroom.entrypoints.service import open_serving_facade, run_retention_every
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom


class CountingRetention:
    """Counts runs; the second one fails, as a storage outage would."""

    def __init__(self) -> None:
        self.runs = 0
        self.ran = asyncio.Event()

    async def run(self) -> None:
        self.runs += 1
        if self.runs >= 3:
            self.ran.set()
        if self.runs == 2:
            raise RuntimeError("storage is down")


class FakeFacade:
    def __init__(self) -> None:
        self.retention = CountingRetention()


def _retention_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == "retention"}


class TestRetentionLoop:
    """Runs every interval, survives a failing run, stops when asked."""

    def test_runs_repeatedly_survives_a_failure_and_stops(self) -> None:
        """Three runs despite the second failing; none after the task is cancelled."""

        async def scenario() -> tuple[int, int]:
            facade = FakeFacade()
            task = asyncio.create_task(run_retention_every(cast(Strongroom, facade), 0.01))
            await asyncio.wait_for(facade.retention.ran.wait(), 5)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            after_stop = facade.retention.runs
            await asyncio.sleep(0.05)
            return after_stop, facade.retention.runs

        after_stop, later = asyncio.run(scenario())
        assert after_stop >= 3
        assert later == after_stop

    def test_serving_facade_with_interval_zero_starts_no_loop(self, tmp_path: Path) -> None:
        """``STRONGROOM_RETENTION_INTERVAL=0`` turns the job off."""

        async def scenario() -> int:
            settings = Settings(data_dir=tmp_path, retention_interval=0)
            async with open_serving_facade(settings) as facade:
                assert facade.retention is not None
                return len(_retention_tasks())

        assert asyncio.run(scenario()) == 0

    def test_serving_facade_runs_the_loop_for_its_lifetime(self, tmp_path: Path) -> None:
        """A retention task lives inside the block and is gone after it."""

        async def scenario() -> tuple[int, int]:
            settings = Settings(data_dir=tmp_path, retention_interval=3600)
            async with open_serving_facade(settings):
                inside = len(_retention_tasks())
            return inside, len(_retention_tasks())

        assert asyncio.run(scenario()) == (1, 0)
