"""The background jobs inside ``serve``: retention (``run_retention_every``) and artifact
verification (``run_verification_every``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from strongroom.entrypoints.service import (
    open_serving_facade,
    run_retention_every,
    run_verification_every,
)
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


class CountingVerification:
    """Records what each run was asked to sample."""

    def __init__(self) -> None:
        self.asked: list[datetime | None] = []
        self.ran = asyncio.Event()

    async def run(self, verified_before: datetime | None = None) -> None:
        self.asked.append(verified_before)
        if len(self.asked) >= 6:
            self.ran.set()
        if len(self.asked) == 2:
            raise RuntimeError("storage is down")


class VerifyingFacade:
    def __init__(self) -> None:
        self.verification = CountingVerification()
        self.deps = SimpleNamespace(clock=SimpleNamespace(now=lambda: datetime.now(UTC)))


class TestVerificationLoop:
    """Pending verifications often, a sample of older artifacts every interval."""

    def test_pending_every_tick_and_a_sample_every_interval(self) -> None:
        """Ticks of 0.01 s, samples every 0.03 s: most runs look at pending artifacts
        only, some also at those not verified within the interval; a failure is survived."""

        async def scenario() -> list[datetime | None]:
            facade = VerifyingFacade()
            task = asyncio.create_task(run_verification_every(cast(Strongroom, facade), 0.01, 0.03))
            await asyncio.wait_for(facade.verification.ran.wait(), 5)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return facade.verification.asked

        asked = asyncio.run(scenario())
        samples = [moment for moment in asked if moment is not None]
        assert None in asked
        assert samples
        assert all(moment < datetime.now(UTC) - timedelta(seconds=0.03) for moment in samples)

    def test_serving_facade_runs_the_verifier_unless_both_intervals_are_zero(
        self, tmp_path: Path
    ) -> None:
        """On by default (pending verifications every 10 s); both intervals 0: off."""

        async def count(settings: Settings) -> int:
            async with open_serving_facade(settings):
                return len([t for t in asyncio.all_tasks() if t.get_name() == "verification"])

        default = Settings(data_dir=tmp_path / "a")
        off = Settings(data_dir=tmp_path / "b", verify_pending_interval=0, verify_interval=0)
        assert asyncio.run(count(default)) == 1
        assert asyncio.run(count(off)) == 0
        env = {"STRONGROOM_VERIFY_INTERVAL": "86400", "STRONGROOM_VERIFY_PENDING_INTERVAL": "0"}
        configured = Settings.from_env(env)
        assert (configured.verify_interval, configured.verify_pending_interval) == (86400, 0)
