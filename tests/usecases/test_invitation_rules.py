"""Invitation rules through the facade: seven days to accept, the email kept as given,
states as the list shows them, seats shared with members until an invitation expires, and
only a person accepts.

Moved down from ``tests/http/test_invitations.py``, which keeps the wire shapes, the status
codes and the order of checks (more rules in ``tests/usecases/test_members.py``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from strongroom.adapters.memory.services import ManualClock, OutboxMailer
from strongroom.domain.errors import ForbiddenError, InvalidStateError, QuotaExceededError
from strongroom.domain.invitations import InvitationState
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import api_key, enter, sign_in, workspace_admin

SEVEN_DAYS = timedelta(days=7)


async def states(facade: Strongroom, admin: Caller, clock: ManualClock) -> list[InvitationState]:
    """The states of the workspace's invitations now, newest first."""
    page = await facade.invitations.list(admin, admin.scoped_workspace(), PageRequest())
    return [invitation.state(clock.now()) for invitation in page.items]


async def members_usage(facade: Strongroom, admin: Caller) -> int:
    """The ``members_per_workspace`` usage."""
    quotas = await facade.workspaces.quotas(admin, admin.scoped_workspace())
    (entry,) = [q for q in quotas if q.resource is QuotaResource.MEMBERS_PER_WORKSPACE]
    return entry.usage


async def test_an_invitation_is_pending_for_seven_days_mailed_and_listed(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Pending, the email trimmed but in its case, expiring seven days after its creation;
    the mail goes to that address with the acceptance link; the list shows it."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    invitation = await facade.invitations.create(ada, wid, "  Ann@Example.com ", "member")
    assert (invitation.email, invitation.role) == ("Ann@Example.com", "member")
    assert invitation.state(clock.now()) is InvitationState.PENDING
    assert invitation.expires_at - invitation.created_at == SEVEN_DAYS
    mailer = facade.deps.mailer
    assert isinstance(mailer, OutboxMailer)
    [message] = mailer.outbox
    assert message.to == "Ann@Example.com"
    assert f"/v1/invitations/{invitation.id}/accept" in message.body
    listed = await facade.invitations.list(ada, wid, PageRequest())
    assert (listed.items, listed.next_cursor) == ([invitation], None)


async def test_the_invited_person_joins_with_the_role_once(
    facade: Strongroom, clock: ManualClock
) -> None:
    """The email matches in any case; the person then holds the role's permissions; the
    invitation is listed ``accepted`` and cannot be used again."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    invitation = await facade.invitations.create(ada, wid, "ann@example.com", "member")
    ann = await sign_in(facade, "ANN@example.com")
    membership = await facade.invitations.accept(ann, invitation.id)
    assert (membership.workspace_id, membership.role) == (wid, "member")
    scoped = await enter(facade, ann, wid)
    assert Permission.BACKUPS_WRITE in scoped.permissions
    assert await states(facade, ada, clock) == [InvitationState.ACCEPTED]
    with pytest.raises(InvalidStateError):
        await facade.invitations.accept(scoped, invitation.id)


async def test_an_expired_invitation_cannot_be_used_and_is_listed_expired(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Seven days on: ``invalid_state`` naming the expiry; the list says ``expired``."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    invitation = await facade.invitations.create(ada, wid, "ann@example.com", "viewer")
    clock.advance(SEVEN_DAYS)
    ann = await sign_in(facade, "ann@example.com")
    with pytest.raises(InvalidStateError, match="expired"):
        await facade.invitations.accept(ann, invitation.id)
    fresh = await enter(facade, await sign_in(facade, "ada@example.com"), wid)
    assert await states(facade, fresh, clock) == [InvitationState.EXPIRED]


async def test_members_and_pending_invitations_share_the_quota(
    facade: Strongroom, clock: ManualClock
) -> None:
    """Limit 2: Ada plus one pending invitation fill it (usage 2); an expired invitation
    frees its seat."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    await facade.workspaces.set_quota(wid, QuotaResource.MEMBERS_PER_WORKSPACE, 2)
    await facade.invitations.create(ada, wid, "ann@example.com", "viewer")
    with pytest.raises(QuotaExceededError, match="members_per_workspace") as refused:
        await facade.invitations.create(ada, wid, "bob@example.com", "viewer")
    assert refused.value.code == "quota_exceeded"
    assert await members_usage(facade, ada) == 2
    clock.advance(SEVEN_DAYS)
    fresh = await enter(facade, await sign_in(facade, "ada@example.com"), wid)
    await facade.invitations.create(fresh, wid, "bob@example.com", "viewer")


async def test_machines_cannot_accept(facade: Strongroom) -> None:
    """An API key is no person: ``forbidden``."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    key = await api_key(facade, ada, [])
    invitation = await facade.invitations.create(ada, wid, "ann@example.com", "viewer")
    with pytest.raises(ForbiddenError):
        await facade.invitations.accept(key, invitation.id)
