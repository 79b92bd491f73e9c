"""Wake-ups of waiting claims (contract 11): a long-polling ``POST /v1/claims`` waits for
word that its workspace has new queued runs instead of asking the database in a loop.

A wake-up is only a hint to look again: a missed one delays a claim (the claim still looks
again on its own every few seconds), a spurious one costs one look.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID


class Wakeup(Protocol):
    """One waiting claim's ticket: set by the first announcement for its workspace after
    the ticket was taken (so an announcement between the claim's look and its wait is not
    lost)."""

    async def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds; whether an announcement came. Holds no
        database connection."""
        ...

    def close(self) -> None:
        """Stop watching (idempotent)."""
        ...


class RunSignals(Protocol):
    """Announcements of new queued runs, per workspace, to the claims waiting in this
    process (and, for a shared database, in every process)."""

    def watch(self, workspace_id: UUID) -> Wakeup:
        """A ticket for the next announcement of ``workspace_id`` (called on the event loop
        that will wait on it)."""
        ...

    def watch_any(self) -> Wakeup:
        """A ticket for the next announcement of any workspace: what the service executor
        waits on (it claims cloud runs of every workspace)."""
        ...

    def announce(self, workspace_id: UUID) -> None:
        """Wake this process's claims waiting for ``workspace_id``, from any thread or loop.
        Called after the commit that queued the runs; other processes hear of them from the
        unit of work's ``runs.announce_queued`` (when the database can tell them)."""
        ...
