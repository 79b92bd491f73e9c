"""Invitations: invite people to the workspace, and accept an invitation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer
from strongroom.adapters.http.openapi import Paged, Routes
from strongroom.adapters.http.shapes import Invitation, InvitationCreate, Membership
from strongroom.adapters.http.wire import listing, present
from strongroom.domain.invitations import Invitation as DomainInvitation
from strongroom.domain.pagination import Page
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
    body=InvitationCreate,
    billing="config",
    located="/v1/workspaces/{wid}/invitations",
)
async def create_invitation(ctx: ApiContext) -> Response:
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
    grant = await ctx.grant(CREATE_INVITATION)
    body = ctx.json(InvitationCreate)
    now = ctx.facade.now()
    invitation = await ctx.facade.invitations.create(
        grant,
        ctx.path_id("wid"),
        body.email,
        body.role,
        accept_url_base=ctx.base_url,
        idempotency=ctx.idempotency(),
    )
    return answer(presented(invitation, now), 201)


@routes.get(
    "/v1/workspaces/{wid}/invitations",
    Paged(Invitation),
    "One page of invitations.",
    READ_INVITATIONS,
)
async def list_invitations(ctx: ApiContext) -> Response:
    """List invitations

    The workspace's invitations, newest first. Needs `invitations:read`."""
    grant = await ctx.grant(READ_INVITATIONS)
    page = await ctx.facade.invitations.list(grant, ctx.path_id("wid"), ctx.page())
    now = ctx.facade.now()
    return answer(listed(page, now))


@routes.action(
    "/v1/invitations/{id}/accept", Membership, "The new membership.", billing="config", person=True
)
async def accept_invitation(ctx: ApiContext) -> Response:
    """Accept an invitation

    Joins the invitation's workspace with its role. A signed-in person whose email is
    the invited one (case-insensitively); no workspace scope needed, no permission.

    Errors:
    - `not_found`: no such invitation, or one addressed to another email
    - `quota_exceeded`: `members_per_workspace` is reached
    - `invalid_state`: the invitation is expired or already used, the person is already a
      member, or its role no longer exists"""
    caller = await ctx.caller()
    invitation_id = ctx.path_id("id")
    caller.person(ACCEPT_REFUSAL)
    ctx.empty_body()
    membership = await ctx.facade.invitations.accept(caller, invitation_id)
    return answer(membership)
