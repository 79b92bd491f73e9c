"""Workspaces, their quotas and their audit trail."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response
from starlette.routing import Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.shapes import WorkspaceCreate, WorkspaceUpdate
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.timestamps import parse_timestamp
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving.audit_trail import READ_AUDIT
from strongroom.ports.driving.workspaces import (
    CREATE_REFUSAL,
    DELETE_WORKSPACE,
    LIST_REFUSAL,
    UPDATE_WORKSPACE,
)


@endpoint
async def list_workspaces(ctx: ApiContext) -> Response:
    """The caller's memberships."""
    caller = await ctx.person(LIST_REFUSAL)
    page = ctx.page()
    result = await ctx.facade.workspaces.memberships(caller, page)
    return answer(result)


@endpoint
async def create_workspace(ctx: ApiContext) -> Response:
    """Create a workspace; the caller becomes its admin."""
    caller = await ctx.person(CREATE_REFUSAL)
    body = ctx.json(WorkspaceCreate)
    workspace = await ctx.facade.workspaces.create(caller, body.name, idempotency=ctx.idempotency())
    return answer(workspace, 201)


@endpoint
async def get_workspace(ctx: ApiContext) -> Response:
    """One workspace."""
    caller = await ctx.caller()
    workspace = await ctx.facade.workspaces.get(caller, ctx.path_id("wid"))
    return answer(workspace)


@endpoint
async def patch_workspace(ctx: ApiContext) -> Response:
    """Rename a workspace."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(
        caller, UPDATE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
    )
    body = ctx.json(WorkspaceUpdate)
    workspace = await ctx.facade.workspaces.rename(caller, workspace_id, body.name)
    return answer(workspace)


@endpoint
async def delete_workspace(ctx: ApiContext) -> Response:
    """Delete a workspace and everything of it."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(
        caller, DELETE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
    )
    ctx.empty_body()
    await ctx.facade.workspaces.delete(caller, workspace_id)
    return no_content()


@endpoint
async def get_quotas(ctx: ApiContext) -> Response:
    """Effective limits and usage."""
    caller = await ctx.caller()
    quotas = await ctx.facade.workspaces.quotas(caller, ctx.path_id("wid"))
    return answer({"data": quotas, "next_cursor": None})


def _audit_filter(ctx: ApiContext) -> AuditFilter:
    query = ctx.request.query_params
    actor_id = query.get("actor_id")
    since = query.get("since")
    try:
        actor = None if actor_id is None else UUID(actor_id)
    except ValueError as error:
        raise InvalidRequestError("actor_id must be a UUID") from error
    when = None if since is None else parse_timestamp(since, "since")
    return AuditFilter(action=query.get("action") or None, actor_id=actor, since=when)


@endpoint
async def list_audit(ctx: ApiContext) -> Response:
    """The workspace's audit events, newest first; filters ``action``, ``actor_id``, ``since``."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, READ_AUDIT, workspace_id=workspace_id)
    filters = _audit_filter(ctx)
    page = ctx.page()
    events = await ctx.facade.audit.events(caller, workspace_id, filters, page)
    return answer(events)


routes = [
    Route("/v1/workspaces", list_workspaces, methods=["GET"]),
    Route("/v1/workspaces", create_workspace, methods=["POST"]),
    Route("/v1/workspaces/{wid}", get_workspace, methods=["GET"]),
    Route("/v1/workspaces/{wid}", patch_workspace, methods=["PATCH"]),
    Route("/v1/workspaces/{wid}", delete_workspace, methods=["DELETE"]),
    Route("/v1/workspaces/{wid}/quotas", get_quotas, methods=["GET"]),
    Route("/v1/workspaces/{wid}/audit", list_audit, methods=["GET"]),
]
