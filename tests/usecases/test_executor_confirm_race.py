"""A heartbeat that meets its own run's confirm (contract 11): the run's outcome is the
confirm's, not a lost run."""

from __future__ import annotations

import asyncio
import logging

import pytest
from test_service_executor import FakeReaders, cloud_backup

from strongroom.adapters.runtime.executor import Executor
from strongroom.domain.artifacts import Artifact
from strongroom.domain.runs import Run, RunState
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.executions import HeldRun, ServiceRuns
from support.people import workspace_admin


class SlowToResume(ServiceRuns):
    """Service runs whose confirm commits, then takes ``delay`` seconds to return: the
    gap between the database's commit and the work resuming, which a busy machine makes
    long enough for a heartbeat."""

    delay = 0.3

    async def finish(self, held: HeldRun, artifact: Artifact, size: int, sha256: str) -> Run:
        finished = await super().finish(held, artifact, size, sha256)
        await asyncio.sleep(self.delay)
        return finished


async def test_a_heartbeat_after_the_confirm_committed_leaves_the_run_succeeded(
    facade: Strongroom, caplog: pytest.LogCaptureFixture
) -> None:
    """The heartbeat finds the run no longer running (it succeeded): the executor reports
    the run succeeded, as stored, and warns of no lost run."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    run = await facade.runs.trigger(ada, await cloud_backup(facade, ada))
    runs = SlowToResume(facade.deps, facade.artifacts)
    held = await runs.claim()
    assert held is not None
    executor = Executor(runs, FakeReaders(b"archive"), heartbeat_every=0.05)
    with caplog.at_level(logging.INFO, logger="strongroom.adapters.runtime.executor"):
        ended = await executor.execute(held)
    assert ended is not None
    assert (ended.id, ended.state) == (run.id, RunState.SUCCEEDED)
    assert (await facade.runs.get(ada, run.id)).state is RunState.SUCCEEDED
    assert "lost" not in caplog.text
    assert "succeeded" in caplog.text
