"""Blocking calls that must run to their end even when their caller is cancelled.

``asyncio.to_thread`` drops a call that no worker thread has started yet when the awaiting
task is cancelled: an object opened for a restore would then never be closed (a file or a
pooled connection left to the garbage collector). ``run_to_the_end`` shields the call, and
hands what an abandoned call returns to a clean-up."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def run_to_the_end(call: Callable[[], T], abandoned: Callable[[T], None] | None = None) -> T:
    """What ``call`` returns, run in a worker thread. A cancellation of the caller is
    raised at once, but the call still runs to its end, and what it returns then goes to
    ``abandoned`` (when given); its failure, if any, is dropped."""
    running = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        running.add_done_callback(functools.partial(_settle, abandoned))
        raise


def _settle(abandoned: Callable[[T], None] | None, running: asyncio.Future[T]) -> None:
    """Hand an abandoned call's result to its clean-up; retrieving its failure keeps asyncio
    from logging it as never retrieved."""
    if running.cancelled() or running.exception() is not None:
        return
    if abandoned is not None:
        abandoned(running.result())
