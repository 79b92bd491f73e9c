"""Invitations: invite people to the workspace, and accept an invitation."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.invitations import Invitation, InvitationCreate, Membership
from strongroom.adapters.wire.present import listing, present
from strongroom.domain.invitations import Invitation as DomainInvitation
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import Membership as DomainMembership
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.invitations import (
    ACCEPT_REFUSAL,
    CREATE_INVITATION,
    READ_INVITATIONS,
)

routes = Routes("Members")


def presented(invitation: DomainInvitation, now: datetime) -> Any:
    """An invitation; ``state`` is ``expired`` once ``expires_at`` has passed unused."""
    return present(invitation, state=invitation.state(now).value)


def listed(page: Page[DomainInvitation], now: datetime) -> Any:
    """A page of invitations."""
    return listing(page, lambda item: presented(item, now))


@routes.create(
    "/v1/workspaces/{wid}/invitations",
    Invitation,
    "The invitation.",
    CREATE_INVITATION,
    billing="config",
    located="/v1/workspaces/{wid}/invitations/{id}",
)
async def create_invitation(
    ctx: ApiContext,
    grant: Grant,
    wid: UUID,
    body: InvitationCreate,
    idempotency: IdempotencyKey | None,
) -> Any:
    """Invite a person

    Invites an email address with a role whose every permission the caller holds; the
    invitation is delivered by mail and is usable once, for seven days. Members plus
    pending invitations count against `members_per_workspace`. Needs
    `invitations:write`.

    Errors:
    - `invalid_request`: `email` is not an email address; bad `role` slug
    - `forbidden`: the role holds a permission the caller lacks
    - `validation_failed`: the role does not exist in the workspace
    - `quota_exceeded`: `members_per_workspace` is reached"""
    now = ctx.facade.now()
    invitation = await ctx.facade.invitations.create(
        grant,
        wid,
        body.email,
        body.role,
        accept_url_base=ctx.mail_base_url,
        idempotency=idempotency,
    )
    return presented(invitation, now)


@routes.get(
    "/v1/workspaces/{wid}/invitations",
    Paged(Invitation),
    "One page of invitations.",
    READ_INVITATIONS,
)
async def list_invitations(facade: Strongroom, grant: Grant, wid: UUID, page: PageRequest) -> Any:
    """List invitations

    The workspace's invitations, newest first. Needs `invitations:read`."""
    invitations = await facade.invitations.list(grant, wid, page)
    return listed(invitations, facade.now())


@routes.get(
    "/v1/workspaces/{wid}/invitations/{id}", Invitation, "The invitation.", READ_INVITATIONS
)
async def get_invitation(facade: Strongroom, grant: Grant, wid: UUID, id: UUID) -> Any:
    """Get an invitation

    One invitation of the workspace, with its state. Needs `invitations:read`."""
    invitation = await facade.invitations.get(grant, wid, id)
    return presented(invitation, facade.now())


@routes.action(
    "/v1/invitations/{id}/accept",
    Membership,
    "The new membership.",
    billing="config",
    person=ACCEPT_REFUSAL,
)
async def accept_invitation(facade: Strongroom, caller: Caller, id: UUID) -> DomainMembership:
    """Accept an invitation

    Joins the invitation's workspace with its role. A signed-in person whose email is
    the invited one (case-insensitively); no workspace scope needed, no permission.

    Errors:
    - `not_found`: no such invitation, or one addressed to another email
    - `quota_exceeded`: `members_per_workspace` is reached
    - `invalid_state`: the invitation is expired or already used, the person is already a
      member, or its role no longer exists"""
    return await facade.invitations.accept(caller, id)
