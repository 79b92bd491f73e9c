"""Concurrent asks answered by one call per batch: what thousands of long polls arriving at
once need, so that their credential checks and first looks take one pooled connection
between them instead of one each.

``Coalesced(answer)`` keeps, per event loop, at most one batch in flight. An ask that
finds none in flight leads one at once (a lone ask costs what it did alone); asks that
come while one is in flight queue, and when it ends the first of them leads the next
batch with all of them (at most ``limit``). No task of its own: each batch is led by one
of the asks it answers, which then returns its own answer.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

# What a queued ask's future holds when its owner is to lead the next batch.
_LEAD = object()


class _Queue(Generic[K]):
    """The asks of one event loop waiting for a batch, and whether one is in flight."""

    __slots__ = ("busy", "waiting")

    def __init__(self) -> None:
        self.busy = False
        self.waiting: deque[tuple[K, asyncio.Future[object]]] = deque()


class Coalesced(Generic[K, R]):
    """Asks for keys ``K`` answered in batches by ``answer`` (the answers of the keys it
    was given; a key it leaves out is answered None). An error of ``answer`` is the
    error of every ask of its batch."""

    def __init__(
        self, answer: Callable[[Sequence[K]], Awaitable[Mapping[K, R]]], limit: int = 1000
    ) -> None:
        self._answer = answer
        self._limit = max(1, limit)
        self._queues: dict[asyncio.AbstractEventLoop, _Queue[K]] = {}

    async def ask(self, key: K) -> R | None:
        """The answer for ``key``, from the batch it joins."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        if queue.busy:
            future: asyncio.Future[object] = loop.create_future()
            queue.waiting.append((key, future))
            try:
                outcome = await future
            except asyncio.CancelledError:
                # Handed the lead (or an answer) just as it was cancelled: pass it on.
                led = future.done() and not future.cancelled() and future.exception() is None
                if led and future.result() is _LEAD:
                    self._hand_over(loop, queue)
                raise
            if outcome is not _LEAD:
                return outcome  # type: ignore[return-value]
        else:
            queue.busy = True
        return await self._lead(loop, queue, key)

    async def _lead(self, loop: asyncio.AbstractEventLoop, queue: _Queue[K], key: K) -> R | None:
        """Answer ``key`` and the asks queued behind it (up to the limit) in one call."""
        batch = [queue.waiting.popleft() for _ in range(min(len(queue.waiting), self._limit - 1))]
        try:
            answers = await self._answer([key, *(other for other, _ in batch)])
        except asyncio.CancelledError:
            # The leader was cancelled: the others are answered by the next batch.
            queue.waiting.extendleft(reversed([entry for entry in batch if not entry[1].done()]))
            raise
        except Exception as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
                    future.exception()  # an ask cancelled meanwhile leaves it unread
            raise
        finally:
            self._hand_over(loop, queue)
        for other, future in batch:
            if not future.done():
                future.set_result(answers.get(other))
        return answers.get(key)

    def _hand_over(self, loop: asyncio.AbstractEventLoop, queue: _Queue[K]) -> None:
        """The first ask still waiting leads the next batch; with none, nothing is in flight."""
        while queue.waiting:
            _, future = queue.waiting.popleft()
            if not future.done():
                future.set_result(_LEAD)
                return
        queue.busy = False
        if self._queues.get(loop) is queue:
            del self._queues[loop]
