"""In-process wake-ups of waiting claims (``RunSignals``): enough when one process serves
the database (memory, SQLite), and the local half of PostgreSQL's LISTEN/NOTIFY.

Waiters may sit on any event loop of the process (the server's, the blocking facade's):
an announcement resolves each waiter's future on the waiter's own loop. Tickets are kept
per workspace and worker, so an announcement wakes only the claims of the one worker that
can take the work, whatever the number of claims waiting beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from uuid import UUID

# The key of the service's tickets (``watch_any``) among the workers' ones.
_SERVICE = None


def notice(workspace_id: UUID, worker_id: UUID | None) -> str:
    """An announcement as other processes hear it (``hear``): ``<workspace id>:<worker
    id>``, or ``<workspace id>:`` for the service's work."""
    return f"{workspace_id}:{'' if worker_id is None else worker_id}"


class _Ticket:
    """One waiter: a future on its own loop, resolved by the next announcement."""

    __slots__ = ("_signals", "future", "key", "loop", "workspace_id")

    def __init__(
        self, signals: InProcessRunSignals, workspace_id: UUID | None, key: UUID | None
    ) -> None:
        self._signals = signals
        self.workspace_id = workspace_id
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[None] = self.loop.create_future()

    async def wait(self, timeout: float) -> bool:
        """Whether the ticket was woken within ``timeout`` seconds."""
        if not self.future.done():
            await asyncio.wait((self.future,), timeout=max(timeout, 0))
        return self.future.done()

    def close(self) -> None:
        """Stop watching."""
        self._signals._forget(self)

    def wake(self) -> None:
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
    """``RunSignals`` within one process: tickets per workspace and worker (the service's
    under no workspace), woken by ``announce``."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        # workspace id (None for the service's tickets) -> worker id -> tickets
        self._tickets: dict[UUID | None, dict[UUID | None, set[_Ticket]]] = {}

    def watch(self, workspace_id: UUID, worker_id: UUID) -> _Ticket:
        """A ticket for the next announcement of work for ``worker_id``."""
        return self._add(_Ticket(self, workspace_id, worker_id))

    def watch_any(self) -> _Ticket:
        """A ticket for the next announcement of the service's work, in any workspace."""
        return self._add(_Ticket(self, None, _SERVICE))

    def announce(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """Wake (and drop) the tickets of ``worker_id`` in ``workspace_id``, or with None
        the service's tickets."""
        with self._guard:
            if worker_id is None:
                fired = self._pop(None, _SERVICE)
            else:
                fired = self._pop(workspace_id, worker_id)
        for ticket in fired:
            ticket.wake()

    def announce_workspace(self, workspace_id: UUID) -> None:
        """Wake every ticket of ``workspace_id`` and the service's: work was queued there
        for someone not named (what an earlier version's notification says)."""
        with self._guard:
            workers = self._tickets.pop(workspace_id, {})
            fired = [t for tickets in workers.values() for t in tickets]
            fired += self._pop(None, _SERVICE)
        for ticket in fired:
            ticket.wake()

    def hear(self, payload: str) -> None:
        """Wake the tickets an announcement from another process names (``notice``); a bare
        workspace id, what an earlier version sends, wakes all of that workspace's. A
        malformed payload is ignored."""
        workspace, separator, worker = payload.partition(":")
        try:
            workspace_id = UUID(workspace)
            worker_id = UUID(worker) if worker else None
        except ValueError:
            return
        if separator:
            self.announce(workspace_id, worker_id)
        else:
            self.announce_workspace(workspace_id)

    def announce_all(self) -> None:
        """Wake every ticket: a wake-up may have been missed (a lost listening
        connection), so every waiter looks again."""
        with self._guard:
            fired = [
                ticket
                for workers in self._tickets.values()
                for tickets in workers.values()
                for ticket in tickets
            ]
            self._tickets.clear()
        for ticket in fired:
            ticket.wake()

    def waiting(self) -> int:
        """How many tickets wait (for tests and metrics)."""
        with self._guard:
            return sum(len(t) for workers in self._tickets.values() for t in workers.values())

    def _add(self, ticket: _Ticket) -> _Ticket:
        with self._guard:
            workers = self._tickets.setdefault(ticket.workspace_id, {})
            workers.setdefault(ticket.key, set()).add(ticket)
        return ticket

    def _pop(self, workspace_id: UUID | None, key: UUID | None) -> set[_Ticket]:
        workers = self._tickets.get(workspace_id)
        if workers is None:
            return set()
        fired = workers.pop(key, set())
        if not workers:
            del self._tickets[workspace_id]
        return fired

    def _forget(self, ticket: _Ticket) -> None:
        with self._guard:
            workers = self._tickets.get(ticket.workspace_id)
            tickets = None if workers is None else workers.get(ticket.key)
            if workers is None or tickets is None:
                return
            tickets.discard(ticket)
            if not tickets:
                del workers[ticket.key]
                if not workers:
                    del self._tickets[ticket.workspace_id]
