"""Keyset pagination: opaque cursors, limits, and pages that walk a list exactly once."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Cursor,
    PageRequest,
    page_of,
    sort_key,
)

OFFSETS = st.integers(-23 * 60, 23 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC) | OFFSETS
)
CURSORS = st.builds(Cursor, MOMENTS, st.uuids())
URL_SAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@attrs.frozen
class Item:
    """Anything listed by keyset."""

    created_at: datetime
    id: UUID


class TestCursor:
    """Cursors are opaque to clients and come back unchanged."""

    @given(CURSORS)
    def test_a_cursor_survives_the_round_trip(self, cursor: Cursor) -> None:
        """``decode(encode(c))`` names the same position, and the text is URL-safe
        without padding (it goes into ``?cursor=``)."""
        text = cursor.encode()
        assert set(text) <= URL_SAFE
        assert Cursor.decode(text) == cursor

    @given(st.text(max_size=80))
    @example("")
    @example("====")
    @example("not a cursor")
    @example("\ud800")
    @example(_b64("2026-01-01T00:00:00|" + "0" * 32))  # naive time
    @example(_b64("2026-01-01T00:00:00+00:00|not-a-uuid"))
    @example(_b64("yesterday|00000000-0000-0000-0000-000000000000"))
    @example(base64.urlsafe_b64encode(b"\xff\xfe|x").decode())
    def test_garbage_is_an_invalid_request(self, text: str) -> None:
        """Any text that is not a cursor this service issued is ``invalid_request`` (400);
        no text fails with another error."""
        try:
            decoded = Cursor.decode(text)
        except InvalidRequestError:
            return
        assert decoded.created_at.tzinfo is not None

    @given(st.binary(max_size=60))
    def test_random_bytes_are_an_invalid_request(self, raw: bytes) -> None:
        """Well-formed base64 of anything but ``time|uuid`` is refused with 400 only."""
        text = base64.urlsafe_b64encode(raw).decode()
        try:
            decoded = Cursor.decode(text)
        except InvalidRequestError:
            return
        assert Cursor.decode(decoded.encode()) == decoded

    @pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-01:00"])
    def test_a_time_outside_the_utc_range_is_refused(self, moment: str) -> None:
        """A forged cursor whose time cannot be expressed in UTC is 400, not an overflow
        later in a database codec (the cursor goes through the one timestamp parser)."""
        with pytest.raises(InvalidRequestError, match="cursor"):
            Cursor.decode(_b64(f"{moment}|{UUID(int=1)}"))

    def test_a_naive_timestamp_is_refused(self) -> None:
        """A cursor must carry a time zone (the service issues UTC times)."""
        with pytest.raises(InvalidRequestError, match="cursor"):
            Cursor.decode(_b64(f"2026-01-01T00:00:00|{UUID(int=1)}"))


class TestPageRequest:
    """``?limit=`` is 1..200, default 50."""

    @given(st.integers(1, MAX_LIMIT))
    def test_limits_in_range_are_accepted(self, limit: int) -> None:
        """Every limit from 1 to 200 is kept."""
        assert PageRequest(limit).limit == limit

    @given(st.integers(max_value=0) | st.integers(min_value=MAX_LIMIT + 1))
    def test_limits_out_of_range_are_invalid_requests(self, limit: int) -> None:
        """0, negative and over 200 are refused with 400 naming the bounds."""
        with pytest.raises(InvalidRequestError, match="between 1 and 200"):
            PageRequest(limit)

    def test_the_default_is_fifty(self) -> None:
        """Without ``?limit=`` a page holds 50 items."""
        assert PageRequest().limit == DEFAULT_LIMIT == 50
        assert MAX_LIMIT == 200


class TestPages:
    """Walking pages with cursors visits every item once, newest first."""

    @given(
        st.lists(st.builds(Item, MOMENTS, st.uuids()), max_size=40, unique_by=lambda i: i.id),
        st.integers(1, 7),
    )
    def test_following_cursors_visits_every_item_once(self, items: list[Item], limit: int) -> None:
        """Pages of at most ``limit`` items, each cursor sent back as text, give the whole
        list newest first, without duplicates; the last page has no cursor."""
        ordered = sorted(items, key=sort_key, reverse=True)
        seen: list[Item] = []
        request = PageRequest(limit)
        for _ in range(len(items) + 2):
            after = request.after
            remaining = [i for i in ordered if after is None or sort_key(i) < sort_key(after)]
            page = page_of(remaining[: limit + 1], request)
            assert len(page.items) <= limit
            seen.extend(page.items)
            if page.next_cursor is None:
                break
            assert page.next_cursor == Cursor(page.items[-1].created_at, page.items[-1].id)
            request = PageRequest(limit, Cursor.decode(page.next_cursor.encode()))
        assert seen == ordered
