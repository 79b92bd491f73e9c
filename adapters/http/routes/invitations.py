"""Invitations: invite people to the workspace, and accept an invitation.

Every handler runs the contract's order of checks: credential, path ids, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint
from strongroom.adapters.http.shapes import InvitationCreate
from strongroom.adapters.http.wire import listing, present
from strongroom.domain.invitations import Invitation
from strongroom.domain.pagination import Page
from strongroom.ports.driving.invitations import (
    ACCEPT_REFUSAL,
    CREATE_INVITATION,
    READ_INVITATIONS,
)


def presented(invitation: Invitation, now: datetime) -> Any:
    """An invitation; ``state`` is ``expired`` once ``expires_at`` has passed unused."""
    return present(invitation, state=invitation.state(now).value)


def listed(page: Page[Invitation], now: datetime) -> Any:
    """A page of invitations."""
    return listing(page, lambda item: presented(item, now))


@endpoint
async def create_invitation(ctx: ApiContext) -> Response:
    """Invite a person by email; the mailer delivers the acceptance link."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, CREATE_INVITATION, workspace_id=workspace_id)
    body = ctx.json(InvitationCreate)
    now = ctx.facade.deps.clock.now()
    invitation = await ctx.facade.invitations.create(
        caller,
        workspace_id,
        body.email,
        body.role,
        accept_url_base=ctx.base_url,
        idempotency=ctx.idempotency(lambda item: presented(item, now)),
    )
    return answer(presented(invitation, now), 201)


@endpoint
async def list_invitations(ctx: ApiContext) -> Response:
    """The workspace's invitations, newest first."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, READ_INVITATIONS, workspace_id=workspace_id)
    page = await ctx.facade.invitations.list(caller, workspace_id, ctx.page())
    now = ctx.facade.deps.clock.now()
    return answer(listed(page, now))


@endpoint
async def accept_invitation(ctx: ApiContext) -> Response:
    """Join the invitation's workspace (a person whose email is the invited one)."""
    caller = await ctx.caller()
    invitation_id = ctx.path_id("id")
    caller.person(ACCEPT_REFUSAL)
    ctx.empty_body()
    membership = await ctx.facade.invitations.accept(caller, invitation_id)
    return answer(membership)


routes: list[BaseRoute] = [
    Route("/v1/workspaces/{wid}/invitations", create_invitation, methods=["POST"]),
    Route("/v1/workspaces/{wid}/invitations", list_invitations, methods=["GET"]),
    Route("/v1/invitations/{id}/accept", accept_invitation, methods=["POST"]),
]
