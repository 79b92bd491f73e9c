"""Wake-ups of waiting claims across processes on one PostgreSQL database: LISTEN/NOTIFY.

A unit of work that queues work calls ``pg_notify('strongroom_runs', <payload>)`` inside
its transaction (``runs.announce_queued``), so the notification goes out when it commits
and never if it rolls back. The payload (``adapters.signals.notice``) names the workspace
and the worker that can take the work, ``<workspace id>:<worker id>``, or
``<workspace id>:`` for the service's work. Each process keeps ONE dedicated connection
listening on that channel (started with the first waiter, not one per waiting request)
and wakes its own waiters for that worker (or the service's). A bare ``<workspace id>``,
what an earlier version sends, wakes every waiter of the workspace; an earlier version
ignores this one's payloads and finds the work on its own re-check.

A lost connection is reconnected after ``RECONNECT_SECONDS``; while it is down, and once
it is back, every waiting claim is woken to look again (a notification sent meanwhile is
lost). A lost notification only delays a claim until its process's next re-check
(``SWEEP_SECONDS`` in ``ports/driving/claims.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any
from uuid import UUID

import psycopg

from strongroom.adapters.signals import InProcessRunSignals, _Ticket
from strongroom.adapters.sql.postgres import PostgresDatabase

logger = logging.getLogger(__name__)

CHANNEL = "strongroom_runs"
RECONNECT_SECONDS = 1.0


class PostgresRunSignals:
    """``RunSignals`` for every process of one PostgreSQL database."""

    def __init__(self, conninfo: str, kwargs: dict[str, Any] | None = None) -> None:
        self._conninfo = conninfo
        self._kwargs = {**(kwargs or {}), "autocommit": True}
        self._kwargs["application_name"] = "strongroom-listen"
        self._local = InProcessRunSignals()
        self._guard = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # Set while the listening connection is up (for tests and readiness).
        self.listening = threading.Event()

    @classmethod
    def for_database(cls, database: PostgresDatabase) -> PostgresRunSignals:
        """Signals listening with the connection settings of ``database``'s pool."""
        conninfo, kwargs = database.pool.conninfo, database.pool.kwargs or {}
        if not isinstance(conninfo, str) or not isinstance(kwargs, dict):
            raise TypeError("a pool with computed connection parameters cannot listen")
        return cls(conninfo, kwargs)

    def watch(self, workspace_id: UUID, worker_id: UUID) -> _Ticket:
        """A ticket for the next announcement of work for ``worker_id``; starts the
        listening connection on first use."""
        self.start()
        return self._local.watch(workspace_id, worker_id)

    def watch_any(self) -> _Ticket:
        """A ticket for the next announcement of the service's work; starts the listening
        connection on first use."""
        self.start()
        return self._local.watch_any()

    def announce(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """Wake this process's waiters at once (other processes hear the NOTIFY)."""
        self._local.announce(workspace_id, worker_id)

    def start(self) -> None:
        """Start listening on the running loop, unless already listening."""
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._closed or (self._task is not None and not self._task.done()):
                return
            self._task = loop.create_task(self._listen(), name="strongroom-run-signals")

    async def _listen(self) -> None:
        failures = 0
        while True:
            try:
                connection = await psycopg.AsyncConnection.connect(self._conninfo, **self._kwargs)
                async with connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    failures = 0
                    # Runs queued while nobody listened: every waiting claim looks again.
                    self._local.announce_all()
                    async for note in connection.notifies():
                        self._local.hear(note.payload)
            except (psycopg.Error, OSError) as error:
                failures += 1
                # Once per outage at warning level; the retries every second at debug.
                log = logger.warning if failures == 1 else logger.debug
                log(
                    "no LISTEN connection for run wake-ups (%s); retrying every %s s",
                    error,
                    RECONNECT_SECONDS,
                )
            finally:
                self.listening.clear()
            self._local.announce_all()
            await asyncio.sleep(RECONNECT_SECONDS)

    async def aclose(self) -> None:
        """Stop listening (final)."""
        with self._guard:
            self._closed = True
            task, self._task = self._task, None
        if task is None or task.done():
            return
        loop = task.get_loop()
        if loop is asyncio.get_running_loop():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
