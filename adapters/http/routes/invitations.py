"""Invitations: invite people to the workspace, and accept an invitation.

Every handler runs the contract's order of checks: credential, path ids, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint
from strongroom.adapters.http.conventions import located
from strongroom.adapters.http.openapi import Paged, api
from strongroom.adapters.http.shapes import EmptyBody, Invitation, InvitationCreate, Membership
from strongroom.adapters.http.wire import listing, present
from strongroom.domain.invitations import Invitation as DomainInvitation
from strongroom.domain.pagination import Page
from strongroom.ports.driving.invitations import (
    ACCEPT_REFUSAL,
    CREATE_INVITATION,
    READ_INVITATIONS,
)


def presented(invitation: DomainInvitation, now: datetime) -> Any:
    """An invitation; ``state`` is ``expired`` once ``expires_at`` has passed unused."""
    return present(invitation, state=invitation.state(now).value)


def listed(page: Page[DomainInvitation], now: datetime) -> Any:
    """A page of invitations."""
    return listing(page, lambda item: presented(item, now))


@located("/v1/workspaces/{wid}/invitations")
@endpoint
async def create_invitation(ctx: ApiContext) -> Response:
    """Invite a person

    Invites an email address with a role whose every permission the caller holds; the
    invitation is delivered by mail and is usable once, for seven days. Members plus
    pending invitations count against `members_per_workspace`. Needs
    `invitations:write`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, CREATE_INVITATION, workspace_id=workspace_id)
    body = ctx.json(InvitationCreate)
    now = ctx.facade.now()
    invitation = await ctx.facade.invitations.create(
        grant,
        workspace_id,
        body.email,
        body.role,
        accept_url_base=ctx.base_url,
        idempotency=ctx.idempotency(),
    )
    return answer(presented(invitation, now), 201)


@endpoint
async def list_invitations(ctx: ApiContext) -> Response:
    """List invitations

    The workspace's invitations, newest first. Needs `invitations:read`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, READ_INVITATIONS, workspace_id=workspace_id)
    page = await ctx.facade.invitations.list(grant, workspace_id, ctx.page())
    now = ctx.facade.now()
    return answer(listed(page, now))


@endpoint
async def accept_invitation(ctx: ApiContext) -> Response:
    """Accept an invitation

    Joins the invitation's workspace with its role. A signed-in person whose email is
    the invited one (case-insensitively); no workspace scope needed, no permission."""
    caller = await ctx.caller()
    invitation_id = ctx.path_id("id")
    caller.person(ACCEPT_REFUSAL)
    ctx.empty_body()
    membership = await ctx.facade.invitations.accept(caller, invitation_id)
    return answer(membership)


routes: list[BaseRoute] = [
    api(
        "POST",
        "/v1/workspaces/{wid}/invitations",
        create_invitation,
        "createInvitation",
        "Members",
        (201, Invitation, "The invitation."),
        needs=CREATE_INVITATION,
        body=InvitationCreate,
        idempotent=True,
        billing="config",
        errors={
            "invalid_request": "`email` is not an email address; bad `role` slug",
            "forbidden": "the role holds a permission the caller lacks",
            "validation_failed": "the role does not exist in the workspace",
            "quota_exceeded": "`members_per_workspace` is reached",
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/invitations",
        list_invitations,
        "listInvitations",
        "Members",
        (200, Paged(Invitation), "One page of invitations."),
        needs=READ_INVITATIONS,
        paginated=True,
    ),
    api(
        "POST",
        "/v1/invitations/{id}/accept",
        accept_invitation,
        "acceptInvitation",
        "Members",
        (200, Membership, "The new membership."),
        body=EmptyBody,
        body_required=False,
        billing="config",
        person=True,
        errors={
            "not_found": "no such invitation, or one addressed to another email",
            "quota_exceeded": "`members_per_workspace` is reached",
            "invalid_state": (
                "the invitation is expired or already used, the person is already a member, or "
                "its role no longer exists"
            ),
        },
    ),
]
