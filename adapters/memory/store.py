"""The in-memory store: tables of frozen records, changed only through transactions.

A transaction holds the store's lock from start to end, so transactions are serialisable:
no lost update, no quota overshoot, exactly as PostgreSQL's row locks make them. Writes go
to copies of the tables a transaction touches; commit swaps them in, anything else drops
them. Opening a transaction inside another in the same task is refused, because it would
deadlock a real database. The lock is fair and serves every event loop of the process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from strongroom.adapters.concurrency import AnyLoopLock

TABLES = (
    "workspaces",
    "memberships",
    "users",
    "sessions",
    "session_origins",
    "backups",
    "runs",
    "artifacts",
    "restores",
    "drills",
    "artifact_manifests",
    "workers",
    "api_keys",
    "invitations",
    "roles",
    "audit",
    "idempotency",
    "accounts",
    "failed_logins",
    "device_grants",
    "run_references",
    "backup_health",
    "webhooks",
    "webhook_deliveries",
)


class MemoryStore:
    """All of one in-memory service's data. Share one store between units of work."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, Any]] = {name: {} for name in TABLES}
        self._lock = AnyLoopLock()
        self._inside: ContextVar[bool] = ContextVar(f"inside-{id(self)}", default=False)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """A serialisable transaction; it is rolled back unless ``commit`` is called."""
        if self._inside.get():
            raise RuntimeError("a unit of work is already open in this task")
        async with self._lock:
            # set(False), not reset(): a blocking view may end the unit in another task.
            self._inside.set(True)
            try:
                yield Transaction(self)
            finally:
                self._inside.set(False)


class Transaction:
    """Copy-on-write view of the store's tables."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._written: dict[str, dict[Any, Any]] = {}

    def read(self, table: str) -> Mapping[Any, Any]:
        """A table as this transaction sees it."""
        if table in self._written:
            return self._written[table]
        return self._store.tables[table]

    def write(self, table: str) -> dict[Any, Any]:
        """A table this transaction may change."""
        if table not in self._written:
            self._written[table] = dict(self._store.tables[table])
        return self._written[table]

    def commit(self) -> None:
        """Make this transaction's changes visible to the next ones."""
        self._store.tables.update(self._written)
        self._written = {}

    def rollback(self) -> None:
        """Drop this transaction's changes."""
        self._written = {}
