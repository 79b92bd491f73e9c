"""Many storage calls of one use case at once, a bounded number at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")

# Storage calls of one request in flight at once: enough to hide a store's latency, few
# enough not to take every connection of its pool.
STORAGE_CONCURRENCY = 8


async def bounded(calls: Iterable[Awaitable[T]], limit: int) -> list[T]:
    """Await ``calls``, at most ``limit`` at a time; their results in order (the first
    failure is raised once every started call has ended)."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    results = await asyncio.gather(*(one(call) for call in calls), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if not isinstance(result, BaseException)]
