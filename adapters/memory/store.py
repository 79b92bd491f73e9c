"""The in-memory store: tables of frozen records, changed only through transactions.

A transaction holds the store's lock from start to end, so transactions are serialisable:
no lost update, no quota overshoot, exactly as PostgreSQL's row locks make them. Writes go
to copies of the tables a transaction touches; commit swaps them in, anything else drops
them. Opening a transaction inside another on the same thread is refused, because it would
deadlock a real database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

TABLES = (
    "workspaces",
    "memberships",
    "users",
    "sessions",
    "backups",
    "runs",
    "artifacts",
    "workers",
    "api_keys",
    "invitations",
    "roles",
    "audit",
    "idempotency",
    "accounts",
    "failed_logins",
    "device_grants",
)


class MemoryStore:
    """All of one in-memory service's data. Share one store between units of work."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, Any]] = {name: {} for name in TABLES}
        self._lock = threading.Lock()
        self._inside = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A serialisable transaction; it is rolled back unless ``commit`` is called."""
        if getattr(self._inside, "active", False):
            raise RuntimeError("a unit of work is already open on this thread")
        with self._lock:
            self._inside.active = True
            try:
                yield Transaction(self)
            finally:
                self._inside.active = False


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
