"""The list envelope: one page of items and the cursor of the next."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

import attrs

T = TypeVar("T")


@attrs.frozen
class Page(Generic[T]):
    """One page of a list: its items and the cursor of the next page (``None``: the last).
    The server writes it with ``present.listing``; a client reads it into this class."""

    data: list[T]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)
