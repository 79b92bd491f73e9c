"""Workspaces, their quotas and their audit trail."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer, no_content
from strongroom.adapters.http.conventions import if_match
from strongroom.adapters.http.openapi import UUID_SCHEMA, OnePage, Paged, Routes, parameter
from strongroom.adapters.http.shapes import (
    AuditEvent,
    MemberWorkspace,
    Quota,
    Workspace,
    WorkspaceCreate,
    WorkspaceUpdate,
)
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.timestamps import parse_timestamp
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving.audit_trail import READ_AUDIT
from strongroom.ports.driving.workspaces import (
    CREATE_REFUSAL,
    DELETE_WORKSPACE,
    LIST_REFUSAL,
    READ_WORKSPACE,
    UPDATE_WORKSPACE,
)

routes = Routes("Workspaces")


@routes.get("/v1/workspaces", Paged(MemberWorkspace), "One page of memberships.")
async def list_workspaces(ctx: ApiContext) -> Response:
    """List my workspaces

    The caller's memberships, newest workspace first. A person only; no permission
    check.

    Errors:
    - `forbidden`: a machine credential (API key or worker) called it"""
    caller = await ctx.person(LIST_REFUSAL)
    page = ctx.page()
    result = await ctx.facade.workspaces.memberships(caller, page)
    return answer(result)


@routes.create("/v1/workspaces", Workspace, "The new workspace.", body=WorkspaceCreate, person=True)
async def create_workspace(ctx: ApiContext) -> Response:
    """Create a workspace

    Provisions an organization, a customer record and a storage namespace
    (all-or-nothing); the creator becomes `admin`; the workspace starts in billing state
    `trial`. A person only, no permission check; at most 5 workspaces per person.

    Errors:
    - `quota_exceeded`: the person already created 5 workspaces (`workspaces_per_user`)
    - `upstream_unavailable`: the identity provider, billing or object storage failed; nothing
      is left behind"""
    caller = await ctx.person(CREATE_REFUSAL)
    body = ctx.json(WorkspaceCreate)
    workspace = await ctx.facade.workspaces.create(caller, body.name, idempotency=ctx.idempotency())
    return answer(workspace, 201)


@routes.get("/v1/workspaces/{wid}", Workspace, "The workspace.", READ_WORKSPACE)
async def get_workspace(ctx: ApiContext) -> Response:
    """Read a workspace

    One workspace."""
    caller = await ctx.caller()
    workspace = await ctx.facade.workspaces.get(caller, ctx.path_id("wid"))
    return answer(workspace)


@routes.patch(
    "/v1/workspaces/{wid}",
    Workspace,
    "The updated workspace.",
    UPDATE_WORKSPACE,
    body=WorkspaceUpdate,
)
async def update_workspace(ctx: ApiContext) -> Response:
    """Rename a workspace

    Change the workspace's name.

    Errors:
    - `billing_restricted`: the workspace's billing state (`blocked`) refuses configuration
      changes"""
    grant = await ctx.grant(UPDATE_WORKSPACE, "wid")
    body = ctx.json(WorkspaceUpdate)
    precondition = if_match(ctx.request)
    workspace = await ctx.facade.workspaces.rename(
        grant, ctx.path_id("wid"), body.name, precondition=precondition
    )
    return answer(workspace)


@routes.delete("/v1/workspaces/{wid}", "Deleted.", DELETE_WORKSPACE)
async def delete_workspace(ctx: ApiContext) -> Response:
    """Delete a workspace

    Removes the workspace and its records, its audit trail included; irreversible. Its
    sessions, API keys and workers stop working. Allowed in every billing state.
    Artifacts already in the customer's own buckets stay there.

    Errors:
    - `artifact_locked`: an artifact in service storage is inside its lock window"""
    grant = await ctx.grant(DELETE_WORKSPACE, "wid")
    ctx.empty_body()
    await ctx.facade.workspaces.delete(grant, ctx.path_id("wid"))
    return no_content()


@routes.get(
    "/v1/workspaces/{wid}/quotas", OnePage(Quota, "QuotaList"), "The quotas.", READ_WORKSPACE
)
async def list_quotas(ctx: ApiContext) -> Response:
    """Quotas

    Every quota resource's effective limit (0 means unlimited) and current usage. Always
    one page."""
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


@routes.get(
    "/v1/workspaces/{wid}/audit",
    Paged(AuditEvent),
    "One page of events.",
    READ_AUDIT,
    parameters=(
        parameter("action", "query", "Only events of this action, e.g. `backup.update`."),
        parameter("actor_id", "query", "Only events of this actor.", UUID_SCHEMA),
        parameter(
            "since",
            "query",
            "Only events at or after this RFC 3339 timestamp (with a time zone; `Z` for UTC).",
            {"type": "string", "format": "date-time"},
        ),
    ),
)
async def list_audit_events(ctx: ApiContext) -> Response:
    """Audit trail

    The workspace's audit events, newest first: every mutation and every mutation
    refused for a missing permission (`outcome: denied`).

    Errors:
    - `invalid_request`: `actor_id` is not a UUID, or `since` is not an RFC 3339 timestamp with
      a time zone"""
    grant = await ctx.grant(READ_AUDIT)
    filters = _audit_filter(ctx)
    page = ctx.page()
    events = await ctx.facade.audit.events(grant, ctx.path_id("wid"), filters, page)
    return answer(events)
