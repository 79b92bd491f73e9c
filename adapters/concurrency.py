"""A lock that async code on any event loop, in any thread, can wait for without blocking.

``asyncio.Lock`` belongs to one loop; ``threading.Lock`` blocks the loop that waits for it.
The in-memory store and SQLite's single writer are shared by every loop of a process (a
server's loop, the private loop of the blocking facade, a test client's loop), so they
need a lock that is neither.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from types import TracebackType


class AnyLoopLock:
    """A fair (first come, first served) mutual-exclusion lock for coroutines on any loop.

    The holder may release it from another task, loop or thread than the one that
    acquired it: a unit of work may begin in one task and end in another.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held = False
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        # Waiters the lock was handed to, who may not have woken up yet.
        self._granted: set[asyncio.Future[None]] = set()

    def locked(self) -> bool:
        """Whether someone holds the lock."""
        return self._held

    async def acquire(self) -> None:
        """Wait until the lock is free, then hold it."""
        loop = asyncio.get_running_loop()
        with self._guard:
            if not self._held and not self._waiters:
                self._held = True
                return
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except BaseException:
            with self._guard:
                if waiter in self._granted:
                    # Handed over just as we gave up: pass it on.
                    self._granted.discard(waiter)
                    self._release_locked()
                else:
                    self._discard(waiter)
            raise
        with self._guard:
            self._granted.discard(waiter)

    def release(self) -> None:
        """Give the lock to the longest waiter, or free it."""
        with self._guard:
            if not self._held:
                raise RuntimeError("release of an AnyLoopLock that is not held")
            self._release_locked()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    def _release_locked(self) -> None:
        while self._waiters:
            loop, waiter = self._waiters.popleft()
            if loop.is_closed():
                continue
            # Ownership passes now, under the guard; the waiter learns it on its own loop.
            try:
                loop.call_soon_threadsafe(_hand_over, waiter)
            except RuntimeError:
                continue
            self._granted.add(waiter)
            return
        self._held = False

    def _discard(self, waiter: asyncio.Future[None]) -> None:
        self._waiters = deque(entry for entry in self._waiters if entry[1] is not waiter)


def _hand_over(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
