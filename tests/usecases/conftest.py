"""The use-case layer: the async facade on the in-memory adapters, driven directly (no
HTTP), as an embedding service calls it.

``async def`` tests run to completion on an event loop of their own; the facade, its
in-memory store and its storage directory are new for every test.
"""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime
from pathlib import Path

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.ports.driving import Strongroom
from support.world import memory_facade

START = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a coroutine test function on a fresh event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True


@pytest.fixture
def clock() -> ManualClock:
    """Wednesday 2030-01-02 12:00 UTC, moved only by the test."""
    return ManualClock(START)


@pytest.fixture
def storage(tmp_path: Path, clock: ManualClock) -> LocalDiskStorage:
    """Object storage on local disk under the test's own directory."""
    return LocalDiskStorage(tmp_path / "objects", b"use-case tests", clock=clock.now)


@pytest.fixture
def facade(clock: ManualClock, storage: LocalDiskStorage) -> Strongroom:
    """A fresh async facade on the in-memory adapters, with the test's clock and storage."""
    return memory_facade(clock, storage=storage)
