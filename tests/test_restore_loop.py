"""The restore runner's loop inside ``serve`` (contract 11): it runs queued restores every
poll, survives a failing look, and lives exactly as long as the serving facade
(``STRONGROOM_RESTORE_POLL=0``: none). The runner itself is in tests/usecases/test_restores.py
and, on real buckets and databases, in tests/integration/test_restores_real.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from strongroom.entrypoints.service import open_serving_facade, run_restores_every
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom


class CountingRestores:
    """Three restores queued at first; the second look fails, as a database outage would."""

    def __init__(self) -> None:
        self.looks = 0
        self.queued = 3
        self.done = asyncio.Event()

    async def run_queued(self, lease: object = None) -> list[object]:
        self.looks += 1
        if self.looks == 2:
            raise RuntimeError("database is down")
        if self.looks >= 5:
            self.done.set()
        if self.queued:
            self.queued -= 1
            return [object()]
        return []


def _restore_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == "restores"}


def test_the_loop_drains_the_queue_and_survives_a_failure() -> None:
    """Every queued restore is taken despite a failing look in between."""

    async def scenario() -> CountingRestores:
        restores = CountingRestores()
        facade = cast(Strongroom, SimpleNamespace(restores=restores))
        task = asyncio.create_task(run_restores_every(facade, 0.01))
        await asyncio.wait_for(restores.done.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return restores

    restores = asyncio.run(scenario())
    assert restores.queued == 0
    assert restores.looks >= 5


def test_the_serving_facade_runs_the_loop_unless_turned_off(tmp_path: Path) -> None:
    """A ``restores`` task inside the block, gone after it; none with poll 0."""

    async def scenario(poll: float) -> tuple[int, int]:
        settings = Settings(data_dir=tmp_path / str(poll), restore_poll=poll)
        async with open_serving_facade(settings):
            inside = len(_restore_tasks())
        return inside, len(_restore_tasks())

    assert asyncio.run(scenario(10)) == (1, 0)
    assert asyncio.run(scenario(0)) == (0, 0)


def test_the_poll_is_read_from_the_environment() -> None:
    """``STRONGROOM_RESTORE_POLL`` in seconds, 2 by default; negative is refused."""
    assert Settings.from_env({}).restore_poll == 2
    assert Settings.from_env({"STRONGROOM_RESTORE_POLL": "0.5"}).restore_poll == 0.5
    with pytest.raises(ValueError, match="STRONGROOM_RESTORE_POLL"):
        Settings.from_env({"STRONGROOM_RESTORE_POLL": "-1"})
