"""In-process wake-ups of waiting claims (``RunSignals``): enough when one process serves
the database (memory, SQLite), and the local half of PostgreSQL's LISTEN/NOTIFY.

Waiters may sit on any event loop of the process (the server's, the blocking facade's):
an announcement resolves each waiter's future on the waiter's own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict
from uuid import UUID


class _Ticket:
    """One waiter: a future on its own loop, resolved by the next announcement."""

    def __init__(self, signals: InProcessRunSignals, workspace_id: UUID | None) -> None:
        self._signals = signals
        self.workspace_id = workspace_id
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[None] = self.loop.create_future()

    async def wait(self, timeout: float) -> bool:
        """Whether an announcement came within ``timeout`` seconds."""
        if not self.future.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.future), max(timeout, 0))
        return self.future.done()

    def close(self) -> None:
        """Stop watching."""
        self._signals._forget(self)

    def fire(self) -> None:
        """Resolve the future on its loop (from any thread)."""
        if self.loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._resolve()
        else:
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                self.loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class InProcessRunSignals:
    """``RunSignals`` within one process: tickets per workspace, fired by ``announce``."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._tickets: defaultdict[UUID | None, set[_Ticket]] = defaultdict(set)

    def watch(self, workspace_id: UUID) -> _Ticket:
        """A ticket for the next announcement of ``workspace_id``."""
        ticket = _Ticket(self, workspace_id)
        with self._guard:
            self._tickets[workspace_id].add(ticket)
        return ticket

    def watch_any(self) -> _Ticket:
        """A ticket for the next announcement of any workspace."""
        ticket = _Ticket(self, None)
        with self._guard:
            self._tickets[None].add(ticket)
        return ticket

    def announce(self, workspace_id: UUID) -> None:
        """Fire (and drop) every ticket of ``workspace_id`` and every ``watch_any`` one."""
        with self._guard:
            fired = self._tickets.pop(workspace_id, set()) | self._tickets.pop(None, set())
        for ticket in fired:
            ticket.fire()

    def announce_all(self) -> None:
        """Fire every ticket: a wake-up may have been missed (a lost listening
        connection), so every waiting claim looks again."""
        with self._guard:
            fired = [ticket for tickets in self._tickets.values() for ticket in tickets]
            self._tickets.clear()
        for ticket in fired:
            ticket.fire()

    def waiting(self) -> int:
        """How many tickets wait (for tests and metrics)."""
        with self._guard:
            return sum(len(tickets) for tickets in self._tickets.values())

    def _forget(self, ticket: _Ticket) -> None:
        with self._guard:
            tickets = self._tickets.get(ticket.workspace_id)
            if tickets is not None:
                tickets.discard(ticket)
                if not tickets:
                    del self._tickets[ticket.workspace_id]
