"""Session rules through the facade: a provider token is exchanged once, a session ends at
its ``expires_at``, switching from a scoped session, a foreign workspace revoking nothing,
signing out in a blocked workspace, and the provider's token being no session.

Moved down from ``tests/http/test_sessions.py``, which keeps the wire shapes and the
status codes of each route."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import NotFoundError, UnauthenticatedError
from strongroom.ports.driving import Strongroom
from support.people import sign_in, workspace_admin
from support.world import idp_token


async def test_a_provider_token_is_exchanged_once(facade: Strongroom) -> None:
    """A second sign-in with the same identity provider token is unauthenticated."""
    token = await idp_token(facade, "ada@example.com")
    await facade.sessions.sign_in(token)
    with pytest.raises(UnauthenticatedError):
        await facade.sessions.sign_in(token)


async def test_the_providers_token_is_no_session(facade: Strongroom) -> None:
    """The identity provider's access token authenticates nobody as a session."""
    token = await idp_token(facade, "ada@example.com")
    with pytest.raises(UnauthenticatedError):
        await facade.access.authenticate(token)


async def test_a_session_ends_at_its_expiry(facade: Strongroom, clock: ManualClock) -> None:
    """It works until a second before ``expires_at``, and not at it."""
    issued = await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))
    assert issued.token is not None
    assert issued.expires_at > clock.now() + timedelta(days=1)
    clock.advance(issued.expires_at - clock.now() - timedelta(seconds=1))
    await facade.access.authenticate(issued.token)
    clock.advance(timedelta(seconds=1))
    with pytest.raises(UnauthenticatedError):
        await facade.access.authenticate(issued.token)


async def test_a_scoped_session_switches_to_another_workspace(facade: Strongroom) -> None:
    """The new session is scoped to the second workspace; the first one stops working."""
    ada, first = await workspace_admin(facade, "ada@example.com", "First")
    second = await facade.workspaces.create(ada, "Second")
    old = (await facade.sessions.switch(ada, first)).token
    assert old is not None
    scoped = await facade.access.authenticate(old)
    issued = await facade.sessions.switch(scoped, second.id)
    assert issued.workspace_id == second.id != first
    with pytest.raises(UnauthenticatedError):
        await facade.access.authenticate(old)


async def test_a_foreign_or_missing_workspace_revokes_nothing(facade: Strongroom) -> None:
    """Switching into Eve's workspace or none at all is ``not_found``; the session goes on."""
    _, foreign = await workspace_admin(facade, "eve@example.com", "Eve's")
    issued = await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))
    assert issued.token is not None
    for workspace_id in (foreign, uuid4()):
        person = await facade.access.authenticate(issued.token)
        with pytest.raises(NotFoundError):
            await facade.sessions.switch(person, workspace_id)
    await facade.access.authenticate(issued.token)


async def test_a_scoped_session_signs_out_even_when_blocked(facade: Strongroom) -> None:
    """Signing out is no billing write: a blocked workspace's session ends all the same."""
    person = await sign_in(facade, "ada@example.com")
    workspace = await facade.workspaces.create(person, "Acme")
    token = (await facade.sessions.switch(person, workspace.id)).token
    assert token is not None
    await facade.workspaces.set_billing_state(workspace.id, BillingState.BLOCKED)
    await facade.sessions.sign_out(await facade.access.authenticate(token))
    with pytest.raises(UnauthenticatedError):
        await facade.access.authenticate(token)
