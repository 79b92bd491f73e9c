"""Keyset pagination: lists are ordered newest first by ``(created_at, id)``.

A cursor names the last item of a page; the next page holds the items strictly before it.
Cursors are opaque to clients (URL-safe base64 of the key).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import datetime
from typing import Generic, Protocol, TypeVar
from uuid import UUID

import attrs

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.timestamps import parse_timestamp

T = TypeVar("T")


class Keyed(Protocol):
    """Anything listed by keyset: it has a creation time and an id."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> UUID: ...


K = TypeVar("K", bound=Keyed)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@attrs.frozen(order=True)
class Cursor:
    """The sort key of the last item on a page."""

    created_at: datetime
    id: UUID

    def encode(self) -> str:
        """The opaque form given to clients."""
        raw = f"{self.created_at.isoformat()}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """Parse a cursor a client sent back; anything else is ``invalid_request``."""
        try:
            padded = text + "=" * (-len(text) % 4)
            created_at, _, item_id = base64.urlsafe_b64decode(padded).decode().partition("|")
            when = parse_timestamp(created_at, "cursor")
            return cls(when, UUID(item_id))
        except (InvalidRequestError, ValueError, binascii.Error, UnicodeDecodeError) as error:
            raise InvalidRequestError("cursor is not one this service issued") from error


@attrs.frozen
class PageRequest:
    """How many items to return, and after which one."""

    limit: int = DEFAULT_LIMIT
    after: Cursor | None = None

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidRequestError(f"limit must be between 1 and {MAX_LIMIT}")


@attrs.frozen
class Page(Generic[T]):
    """One page of a list and the cursor of the next page, if any."""

    items: Sequence[T]
    next_cursor: Cursor | None


def page_of(items: Sequence[K], request: PageRequest) -> Page[K]:
    """Cut ``limit + 1`` fetched items into a page; the extra item proves a next page exists."""
    if len(items) <= request.limit:
        return Page(list(items), None)
    shown = list(items[: request.limit])
    return Page(shown, Cursor(shown[-1].created_at, shown[-1].id))


def sort_key(item: Keyed) -> tuple[datetime, UUID]:
    """The keyset order of an item (lists sort by it, descending)."""
    return (item.created_at, item.id)
