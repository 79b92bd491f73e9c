"""``Idempotency-Key`` rules through the facade, on the creation of workspaces (contract
sections 8 and 10): a replay answers the first creation even past a full quota, a refused
request holds no key, another request under a used key conflicts, keys belong to one person
and one route, and they are remembered for 24 hours.

Moved down from ``tests/http/test_idempotency.py``, which keeps the header's parsing, the
replayed bytes and request ids, and what makes two bodies the same request (the
fingerprint the HTTP adapter computes). Here the fingerprint is given as it would be."""

from __future__ import annotations

from datetime import timedelta

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.errors import (
    IdempotencyConflictError,
    InvalidRequestError,
    QuotaExceededError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.ports.driving import IdempotencyKey, Strongroom
from support.people import sign_in

ROUTE = "POST /v1/workspaces"
DAY = timedelta(hours=24)


def key(name: str, value: str = "k") -> IdempotencyKey:
    """The key ``value`` for creating a workspace called ``name``."""
    return IdempotencyKey(value, ROUTE, f"name={name}")


async def names(facade: Strongroom, person: Caller) -> list[str]:
    """The names of the person's workspaces."""
    page = await facade.workspaces.memberships(person, PageRequest(200))
    return sorted(item.workspace.name for item in page.items)


async def test_a_replay_answers_the_first_creation_and_creates_nothing(
    facade: Strongroom,
) -> None:
    """Same key, same request: the first workspace; one workspace in all."""
    ada = await sign_in(facade, "ada@example.com")
    first = await facade.workspaces.create(ada, "Acme", key("Acme"))
    assert await facade.workspaces.create(ada, "Acme", key("Acme")) == first
    assert await names(facade, ada) == ["Acme"]


async def test_a_replay_outlives_the_quota(facade: Strongroom) -> None:
    """The replay of a creation answers it even once the person's quota is full."""
    ada = await sign_in(facade, "ada@example.com")
    first = await facade.workspaces.create(ada, "W0", key("W0", "k0"))
    for number in range(1, 5):
        await facade.workspaces.create(ada, f"W{number}")
    with pytest.raises(QuotaExceededError):
        await facade.workspaces.create(ada, "W5")
    assert await facade.workspaces.create(ada, "W0", key("W0", "k0")) == first


async def test_without_a_key_nothing_is_deduplicated(facade: Strongroom) -> None:
    """Two creations without a key create two workspaces."""
    ada = await sign_in(facade, "ada@example.com")
    await facade.workspaces.create(ada, "Acme")
    await facade.workspaces.create(ada, "Acme")
    assert await names(facade, ada) == ["Acme", "Acme"]


async def test_a_refused_request_holds_no_key(facade: Strongroom) -> None:
    """A creation refused for its name stores nothing: the key serves the fixed request."""
    ada = await sign_in(facade, "ada@example.com")
    with pytest.raises(InvalidRequestError):
        await facade.workspaces.create(ada, "", key(""))
    assert (await facade.workspaces.create(ada, "Acme", key("Acme"))).name == "Acme"


async def test_another_request_under_a_used_key_conflicts(facade: Strongroom) -> None:
    """``idempotency_conflict``; nothing more is created."""
    ada = await sign_in(facade, "ada@example.com")
    await facade.workspaces.create(ada, "Acme", key("Acme", "key-1"))
    with pytest.raises(IdempotencyConflictError) as refused:
        await facade.workspaces.create(ada, "Other", key("Other", "key-1"))
    assert refused.value.code == "idempotency_conflict"
    assert await names(facade, ada) == ["Acme"]


async def test_another_person_may_reuse_a_key(facade: Strongroom) -> None:
    """Two people under one key each get their own workspace; each person's key still
    conflicts with another request."""
    ada = await sign_in(facade, "ada@example.com")
    bob = await sign_in(facade, "bob@example.com")
    first = await facade.workspaces.create(ada, "Acme", key("Acme", "shared"))
    second = await facade.workspaces.create(bob, "Acme", key("Acme", "shared"))
    assert first.id != second.id
    with pytest.raises(IdempotencyConflictError):
        await facade.workspaces.create(bob, "Other", key("Other", "shared"))
    assert await names(facade, ada) == await names(facade, bob) == ["Acme"]


async def test_the_same_key_on_another_route_is_independent(facade: Strongroom) -> None:
    """A key used to create a workspace serves a switch into it."""
    ada = await sign_in(facade, "ada@example.com")
    workspace = await facade.workspaces.create(ada, "Acme", key("Acme"))
    switch = IdempotencyKey("k", "POST /v1/auth/switch", f"workspace_id={workspace.id}")
    issued = await facade.sessions.switch(ada, workspace.id, switch)
    assert issued.workspace_id == workspace.id


async def test_a_key_replays_within_24_hours(facade: Strongroom, clock: ManualClock) -> None:
    """A second before 24 hours the key still replays, and still conflicts."""
    ada = await sign_in(facade, "ada@example.com")
    first = await facade.workspaces.create(ada, "Acme", key("Acme"))
    clock.advance(DAY - timedelta(seconds=1))
    assert await facade.workspaces.create(ada, "Acme", key("Acme")) == first
    with pytest.raises(IdempotencyConflictError):
        await facade.workspaces.create(ada, "Other", key("Other"))


async def test_a_key_is_free_after_24_hours(facade: Strongroom, clock: ManualClock) -> None:
    """After 24 hours the key creates again, then replays that; a day later it serves
    another request."""
    ada = await sign_in(facade, "ada@example.com")
    first = await facade.workspaces.create(ada, "Acme", key("Acme"))
    clock.advance(DAY + timedelta(seconds=1))
    second = await facade.workspaces.create(ada, "Acme", key("Acme"))
    assert second.id != first.id
    assert await facade.workspaces.create(ada, "Acme", key("Acme")) == second
    clock.advance(timedelta(hours=25))
    third = await facade.workspaces.create(ada, "Other", key("Other"))
    assert len({first.id, second.id, third.id}) == 3
