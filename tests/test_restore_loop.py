"""The restore runner's loop inside ``serve`` (contract 11): it runs queued restores every
poll or when a restore is asked for, survives a failing look, and lives exactly as long as
the serving facade (``STRONGROOM_RESTORE_POLL=0``: none). The runner itself is in
tests/usecases/test_restores.py and, on real buckets and databases, in
tests/integration/test_restores_real.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest

from strongroom.adapters.runtime.restores import RestoreRunner
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.backups import S3Source
from strongroom.domain.restores import RestoreState
from strongroom.entrypoints.service import open_serving_facade, run_restores_every
from strongroom.entrypoints.settings import Settings
from support.people import workspace_admin
from support.restores import RecordingTargets, cloud_backup, confirmed_artifact
from support.world import memory_facade


class Unwoken:
    """A runner's ticket that no announcement fires: its wait is the poll."""

    async def wait(self, timeout: float) -> bool:
        await asyncio.sleep(timeout)
        return False

    def close(self) -> None:
        """Nothing to stop."""


class CountingRestores:
    """Three restores queued at first; the second look fails, as a database outage would."""

    def __init__(self) -> None:
        self.looks = 0
        self.queued = 3
        self.done = asyncio.Event()

    def wakeup(self) -> Unwoken:
        return Unwoken()

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
        task = asyncio.create_task(run_restores_every(cast(RestoreRunner, restores), 0.01))
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


def test_a_waiting_runner_is_woken_by_a_new_restore(tmp_path: Path) -> None:
    """A runner waiting out a poll of an hour takes a restore asked for meanwhile at once:
    the create wakes it (in process here; across processes on PostgreSQL in
    tests/integration/test_executor_wakeups_postgres.py)."""

    async def scenario() -> RestoreState:
        storage = LocalDiskStorage(tmp_path, b"wake-up")
        targets = RecordingTargets()
        facade = memory_facade(storage=storage, restore_targets=targets)
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_backup(facade, ada, S3Source("https://s3.example.com", "source"))
        artifact = await confirmed_artifact(facade, ada, backup.id, b"archive")
        runner = asyncio.create_task(run_restores_every(RestoreRunner(facade.restores), 3600))
        try:
            await asyncio.sleep(0.1)  # its first look found nothing; it waits
            target = S3Source("https://s3.example.net", "restored")
            keys = {"access_key_id": "k", "secret_access_key": "s"}
            restore = await facade.restores.create(ada, artifact.id, target, keys)
            await asyncio.wait_for(targets.started.wait(), 30)
            return (await facade.restores.get(ada, restore.id)).state
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)

    assert asyncio.run(scenario()) in (RestoreState.RUNNING, RestoreState.SUCCEEDED)
