"""The retention job on an interval inside ``serve`` (``RetentionLoop``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, cast

from strongroom.entrypoints.service import RetentionLoop, open_serving_facade
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom


class CountingRetention:
    """Counts runs; the second one fails, as a storage outage would."""

    def __init__(self) -> None:
        self.runs = 0
        self.ran = threading.Event()

    def run(self) -> None:
        self.runs += 1
        if self.runs >= 3:
            self.ran.set()
        if self.runs == 2:
            raise RuntimeError("storage is down")


class FakeFacade:
    def __init__(self) -> None:
        self.retention = CountingRetention()


class TestRetentionLoop:
    """Runs every interval, survives a failing run, stops when asked."""

    def test_runs_repeatedly_survives_a_failure_and_stops(self) -> None:
        """Three runs despite the second failing; none after ``stop``."""
        facade = FakeFacade()
        loop = RetentionLoop(cast(Strongroom, facade), interval=0.01)
        loop.start()
        assert facade.retention.ran.wait(5)
        loop.stop()
        after_stop = facade.retention.runs
        time.sleep(0.05)
        assert facade.retention.runs == after_stop

    def test_serving_facade_with_interval_zero_starts_no_loop(self, tmp_path: Path) -> None:
        """``STRONGROOM_RETENTION_INTERVAL=0`` turns the job off."""
        before = {thread.name for thread in threading.enumerate()}
        settings = Settings(data_dir=tmp_path, retention_interval=0)
        with open_serving_facade(settings) as facade:
            assert "retention" not in {t.name for t in threading.enumerate()} - before
            assert facade.retention is not None

    def test_serving_facade_runs_the_loop_for_its_lifetime(self, tmp_path: Path) -> None:
        """A retention thread lives inside the block and is gone after it."""
        settings = Settings(data_dir=tmp_path, retention_interval=3600)
        with open_serving_facade(settings):
            names: Any = {t.name for t in threading.enumerate()}
            assert "retention" in names
        assert "retention" not in {t.name for t in threading.enumerate()}
