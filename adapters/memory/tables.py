"""What every in-memory repository shares: its table in a transaction, the integrity
checks the SQL schema makes, keyset pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from strongroom.adapters.memory.store import Transaction
from strongroom.domain.pagination import K, Page, PageRequest, page_of, sort_key
from strongroom.ports.driven.repositories import (
    IntegrityViolationError,
)


def keyset_page(items: Iterable[K], page: PageRequest) -> Page[K]:
    """Newest-first keyset page of ``items``, as the SQL adapters' index scans give it."""
    ordered = sorted(items, key=sort_key, reverse=True)
    if page.after is not None:
        after = (page.after.created_at, page.after.id)
        ordered = [item for item in ordered if sort_key(item) < after]
    return page_of(ordered[: page.limit + 1], page)


def purge(table: dict[Any, Any], gone: Callable[[Any], bool]) -> int:
    """Delete the rows of ``table`` that ``gone`` picks; how many."""
    doomed = [key for key, row in table.items() if gone(row)]
    for key in doomed:
        del table[key]
    return len(doomed)


def require(present: bool, what: str) -> None:
    if not present:
        raise IntegrityViolationError(what)


class MemoryRepository:
    table: str

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def _insert(self, key: object, value: object) -> None:
        """Add a row; a key already present is refused, as a primary key would be."""
        require(key not in self._tx.read(self.table), f"a new {self.table} row")
        self._tx.write(self.table)[key] = value

    def _replace(self, key: object, value: object) -> None:
        require(key in self._tx.read(self.table), f"update of a missing {self.table} row")
        self._tx.write(self.table)[key] = value
