"""A blocking producer run in a worker thread, read as an async iterator of chunks.

The producer calls ``emit(chunk)`` for every chunk; ``emit`` blocks while the consumer is
``DEPTH`` chunks behind (back-pressure keeps memory constant) and raises ``ConsumerGoneError`` once
the consumer went away (the iterator closed or its task cancelled), so the producer
unwinds and releases its connections. An exception of the producer is raised to the
consumer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

DEPTH = 4
Emit = Callable[[bytes], None]


class ConsumerGoneError(Exception):
    """The consumer stopped reading; the producer should return."""


_DONE = object()


async def thread_stream(produce: Callable[[Emit], None], name: str) -> AsyncIterator[bytes]:
    """Run ``produce(emit)`` in a thread and yield what it emits."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    room = threading.Semaphore(DEPTH)
    stopped = threading.Event()

    def put(item: object) -> None:
        while not stopped.is_set():
            if room.acquire(timeout=0.5):
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, item)
                except RuntimeError:  # the loop closed under us
                    raise ConsumerGoneError() from None
                return
        raise ConsumerGoneError()

    def emit(chunk: bytes) -> None:
        if stopped.is_set():
            raise ConsumerGoneError()
        if chunk:
            put(chunk)

    def run() -> None:
        try:
            produce(emit)
        except ConsumerGoneError:
            return
        except BaseException as error:  # handed to the consumer, raised there
            try:
                put(error)
            except ConsumerGoneError:
                return
            return
        try:
            put(_DONE)
        except ConsumerGoneError:
            return

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            room.release()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, bytes)
            yield item
    finally:
        # A producer waiting for room sees ``stopped`` within half a second and unwinds.
        stopped.set()
