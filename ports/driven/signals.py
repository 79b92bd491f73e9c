"""Wake-ups of waiting claims (contract 11): a long-polling ``POST /v1/claims`` waits for
word that a run its worker can take was queued instead of asking the database in a loop.

A wake-up is only a hint to look again: a missed one delays a claim (the claims use case
looks for every waiting claim of its process at once every few seconds), a spurious one
costs one look.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID


class Wakeup(Protocol):
    """One waiter's ticket: set by the first announcement it hears after the ticket was
    taken (so an announcement between the waiter's look and its wait is not lost)."""

    async def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds; whether the ticket was woken. Holds no
        database connection."""
        ...

    def wake(self) -> None:
        """Wake the ticket now, from any thread: its waiter found out otherwise that it
        should look again (work found by a re-check, the process stopping)."""
        ...

    def close(self) -> None:
        """Stop watching (idempotent)."""
        ...


class RunSignals(Protocol):
    """Announcements of queued work, to the waiters that can take it, in this process
    (and, for a shared database, in every process).

    Work is announced for the worker that can claim it (the worker its backup names) or
    for the service (``worker_id`` None: a cloud run, a restore, a drill): a waiting claim
    hears the announcements for its own worker only, the service's runners those for the
    service only."""

    def watch(self, workspace_id: UUID, worker_id: UUID) -> Wakeup:
        """A ticket for the next announcement of work for ``worker_id`` in
        ``workspace_id`` (called on the event loop that will wait on it)."""
        ...

    def watch_any(self) -> Wakeup:
        """A ticket for the next announcement of the service's work in any workspace:
        what the service executor and the restore and drill runners wait on."""
        ...

    def announce(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """Wake this process's waiters for work in ``workspace_id`` that ``worker_id``
        can take (None: the service), from any thread or loop. Called after the commit
        that queued the work; other processes hear of it from the unit of work's
        ``runs.announce_queued`` (when the database can tell them)."""
        ...
