"""A blocking call started for a task that is then cancelled still runs (ports/driving/
threads.py): a restore cancelled while its object's close waits for a worker thread must
not leave the object open."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest

from strongroom.adapters.runtime.threads import run_to_the_end

T = TypeVar("T")


def cancelled_while_queued(call: Callable[[], Awaitable[T]]) -> None:
    """Run ``call`` with the only worker thread busy, cancel it while its blocking part
    waits in the queue, then free the thread and let the queue drain."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        release = threading.Event()
        busy = loop.run_in_executor(None, release.wait)
        caller = asyncio.ensure_future(call())
        await asyncio.sleep(0.05)  # the call is queued behind the busy thread
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        release.set()
        await busy
        await loop.run_in_executor(None, lambda: None)  # everything queued before it ran

    asyncio.run(scenario())


def test_a_call_queued_for_a_cancelled_caller_still_runs() -> None:
    closed = threading.Event()
    cancelled_while_queued(lambda: run_to_the_end(closed.set))
    assert closed.is_set()


def test_what_an_abandoned_call_returns_goes_to_its_clean_up() -> None:
    opened = object()
    cleaned: list[object] = []
    cancelled_while_queued(lambda: run_to_the_end(lambda: opened, cleaned.append))
    assert cleaned == [opened]


def test_a_call_the_caller_waits_for_returns_its_value() -> None:
    cleaned: list[int] = []
    assert asyncio.run(run_to_the_end(lambda: 42, cleaned.append)) == 42
    assert cleaned == []


def test_a_failing_abandoned_call_reaches_no_clean_up() -> None:
    cleaned: list[object] = []

    def fails() -> object:
        raise OSError("the disk went away")

    cancelled_while_queued(lambda: run_to_the_end(fails, cleaned.append))
    assert cleaned == []


def test_plain_to_thread_drops_the_queued_call() -> None:
    """Why the helper exists: the same cancellation through ``asyncio.to_thread`` never
    runs the call (if this starts failing, asyncio changed and the helper may go)."""
    closed = threading.Event()
    cancelled_while_queued(lambda: asyncio.to_thread(closed.set))
    assert not closed.is_set()
