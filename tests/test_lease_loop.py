"""The lease job's loop inside ``serve``: it runs every interval, survives a failing run,
and lives exactly as long as the serving facade (``STRONGROOM_LEASE_INTERVAL=0``: none)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from strongroom.entrypoints.service import open_serving_facade, run_leases_every
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom


class CountingLeases:
    """Counts runs; the second one fails, as a database outage would."""

    def __init__(self) -> None:
        self.runs = 0
        self.ran = asyncio.Event()

    async def expire(self) -> None:
        self.runs += 1
        if self.runs >= 3:
            self.ran.set()
        if self.runs == 2:
            raise RuntimeError("database is down")


def _lease_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == "leases"}


def test_the_loop_runs_repeatedly_and_survives_a_failure() -> None:
    """Three runs despite the second failing."""

    async def scenario() -> int:
        leases = CountingLeases()
        facade = cast(Strongroom, SimpleNamespace(leases=leases))
        task = asyncio.create_task(run_leases_every(facade, 0.01))
        await asyncio.wait_for(leases.ran.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return leases.runs

    assert asyncio.run(scenario()) >= 3


def test_the_serving_facade_runs_the_loop_unless_turned_off(tmp_path: Path) -> None:
    """A ``leases`` task inside the block, gone after it; none with interval 0."""

    async def scenario(interval: float) -> tuple[int, int]:
        settings = Settings(data_dir=tmp_path / str(interval), lease_interval=interval)
        async with open_serving_facade(settings):
            inside = len(_lease_tasks())
        return inside, len(_lease_tasks())

    assert asyncio.run(scenario(10)) == (1, 0)
    assert asyncio.run(scenario(0)) == (0, 0)
