"""The order and completeness of paged lists through the facade: backups, audit events and
a person's workspaces come newest first, and following the pages' cursors visits every item
exactly once, whatever the page size and however many items share an instant.

Moved down from ``tests/http/test_pagination.py`` and ``tests/http/test_backups_listing.py``,
which keep the envelope, the cursor on the wire and the parameters' parsing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from support.people import enter, sign_in, workspace_admin
from support.world import memory_facade

T = TypeVar("T")
SECOND = timedelta(seconds=1)


async def every_page(
    fetch: Callable[[PageRequest], Awaitable[Page[T]]], limit: int
) -> tuple[list[T], int]:
    """Every item, following ``next_cursor`` to the end (each page full but the last):
    the items and the number of pages."""
    items: list[T] = []
    pages = 0
    request = PageRequest(limit)
    while True:
        page = await fetch(request)
        pages += 1
        assert len(page.items) <= limit
        items.extend(page.items)
        if page.next_cursor is None:
            return items, pages
        assert len(page.items) == limit
        request = PageRequest(limit, page.next_cursor)


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(0, 9),
    limit=st.integers(1, 4),
    ticks=st.lists(st.booleans(), min_size=9, max_size=9),
)
def test_backup_pages_hold_every_backup_once_newest_first(
    count: int, limit: int, ticks: list[bool]
) -> None:
    """Backups created in the same instant or not: the pages of any size hold each backup
    once, newest first by (created_at, id), in ``ceil(count / limit)`` pages (one when
    empty)."""

    async def scenario() -> None:
        clock = ManualClock()
        facade = memory_facade(clock)
        ada, wid = await workspace_admin(facade, "ada@example.com")
        made: list[Backup] = []
        for number in range(count):
            if ticks[number]:
                clock.advance(SECOND)
            made.append(await facade.backups.create(ada, wid, f"b{number}", BackupKind.MANUAL))
        expected = sorted(made, key=lambda b: (b.created_at, b.id), reverse=True)
        seen, pages = await every_page(
            lambda request: facade.backups.list_in(ada, wid, request), limit
        )
        assert [b.id for b in seen] == [b.id for b in expected]
        assert pages == max(1, -(-count // limit))

    asyncio.run(scenario())


async def test_walking_the_audit_trail_yields_every_event_once_newest_first(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Pages of one event and of three agree with one big page: six renames, then the
    switch, then the creation, each once, times descending."""
    person = await sign_in(facade, "ada@example.com")
    workspace = await facade.workspaces.create(person, "Name 0")
    clock.advance(SECOND)
    ada = await enter(facade, person, workspace.id)
    for number in range(1, 7):
        clock.advance(SECOND)
        await facade.workspaces.rename(ada, workspace.id, f"Name {number}")

    def fetch(request: PageRequest) -> Awaitable[Page]:  # type: ignore[type-arg]
        return facade.audit.events(ada, workspace.id, AuditFilter(), request)

    whole = await facade.audit.events(ada, workspace.id, AuditFilter(), PageRequest(200))
    assert whole.next_cursor is None
    walked, _ = await every_page(fetch, 1)
    assert walked == list(whole.items)
    assert len({event.id for event in walked}) == len(walked) == 8
    assert [event.action for event in walked] == [
        *["workspace.update"] * 6,
        "session.switch",
        "workspace.create",
    ]
    names = [event.changes["name"].after for event in walked[:6] if event.changes]
    assert names == [f"Name {number}" for number in range(6, 0, -1)]
    times = [event.occurred_at for event in walked]
    assert times == sorted(times, reverse=True)
    assert (await every_page(fetch, 3))[0] == walked


async def test_walking_a_persons_workspaces_newest_first(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Pages of two: the newest workspace first, each once."""
    person = await sign_in(facade, "ada@example.com")
    made: list[UUID] = []
    for number in range(5):
        clock.advance(SECOND)
        made.append((await facade.workspaces.create(person, f"W{number}")).id)
    walked, pages = await every_page(
        lambda request: facade.workspaces.memberships(person, request), 2
    )
    assert [item.workspace.name for item in walked] == ["W4", "W3", "W2", "W1", "W0"]
    assert [item.workspace.id for item in walked] == made[::-1]
    assert pages == 3
