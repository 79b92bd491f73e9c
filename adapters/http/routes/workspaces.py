"""Workspaces, their quotas and their audit trail."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.conventions import if_match, located, tagged
from strongroom.adapters.http.openapi import OnePage, Paged, api
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


@endpoint
async def list_workspaces(ctx: ApiContext) -> Response:
    """List my workspaces

    The caller's memberships, newest workspace first. A person only; no permission
    check."""
    caller = await ctx.person(LIST_REFUSAL)
    page = ctx.page()
    result = await ctx.facade.workspaces.memberships(caller, page)
    return answer(result)


@located("/v1/workspaces/{id}")
@endpoint
async def create_workspace(ctx: ApiContext) -> Response:
    """Create a workspace

    Provisions an organization, a customer record and a storage namespace
    (all-or-nothing); the creator becomes `admin`; the workspace starts in billing state
    `trial`. A person only, no permission check; at most 5 workspaces per person."""
    caller = await ctx.person(CREATE_REFUSAL)
    body = ctx.json(WorkspaceCreate)
    workspace = await ctx.facade.workspaces.create(caller, body.name, idempotency=ctx.idempotency())
    return answer(workspace, 201)


@tagged
@endpoint
async def get_workspace(ctx: ApiContext) -> Response:
    """Read a workspace

    One workspace."""
    caller = await ctx.caller()
    workspace = await ctx.facade.workspaces.get(caller, ctx.path_id("wid"))
    return answer(workspace)


@tagged
@endpoint
async def patch_workspace(ctx: ApiContext) -> Response:
    """Rename a workspace

    Change the workspace's name."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(
        caller, UPDATE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
    )
    body = ctx.json(WorkspaceUpdate)
    precondition = if_match(ctx.request)
    workspace = await ctx.facade.workspaces.rename(
        grant, workspace_id, body.name, precondition=precondition
    )
    return answer(workspace)


@endpoint
async def delete_workspace(ctx: ApiContext) -> Response:
    """Delete a workspace

    Removes the workspace and its records, its audit trail included; irreversible. Its
    sessions, API keys and workers stop working. Allowed in every billing state.
    Artifacts already in the customer's own buckets stay there."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(
        caller, DELETE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
    )
    ctx.empty_body()
    await ctx.facade.workspaces.delete(grant, workspace_id)
    return no_content()


@endpoint
async def get_quotas(ctx: ApiContext) -> Response:
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


@endpoint
async def list_audit(ctx: ApiContext) -> Response:
    """Audit trail

    The workspace's audit events, newest first: every mutation and every mutation
    refused for a missing permission (`outcome: denied`)."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, READ_AUDIT, workspace_id=workspace_id)
    filters = _audit_filter(ctx)
    page = ctx.page()
    events = await ctx.facade.audit.events(grant, workspace_id, filters, page)
    return answer(events)


routes: list[BaseRoute] = [
    api(
        "GET",
        "/v1/workspaces",
        list_workspaces,
        "listWorkspaces",
        "Workspaces",
        (200, Paged(MemberWorkspace), "One page of memberships."),
        paginated=True,
        errors={"forbidden": "a machine credential (API key or worker) called it"},
    ),
    api(
        "POST",
        "/v1/workspaces",
        create_workspace,
        "createWorkspace",
        "Workspaces",
        (201, Workspace, "The new workspace."),
        body=WorkspaceCreate,
        idempotent=True,
        person=True,
        errors={
            "quota_exceeded": "the person already created 5 workspaces (`workspaces_per_user`)",
            "upstream_unavailable": (
                "the identity provider, billing or object storage failed; nothing is left behind"
            ),
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}",
        get_workspace,
        "getWorkspace",
        "Workspaces",
        (200, Workspace, "The workspace."),
        needs=READ_WORKSPACE,
    ),
    api(
        "PATCH",
        "/v1/workspaces/{wid}",
        patch_workspace,
        "updateWorkspace",
        "Workspaces",
        (200, Workspace, "The updated workspace."),
        needs=UPDATE_WORKSPACE,
        body=WorkspaceUpdate,
        errors={
            "billing_restricted": (
                "the workspace's billing state (`blocked`) refuses configuration changes"
            )
        },
    ),
    api(
        "DELETE",
        "/v1/workspaces/{wid}",
        delete_workspace,
        "deleteWorkspace",
        "Workspaces",
        (204, None, "Deleted."),
        needs=DELETE_WORKSPACE,
        errors={"artifact_locked": "an artifact in service storage is inside its lock window"},
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/quotas",
        get_quotas,
        "listQuotas",
        "Workspaces",
        (200, OnePage(Quota, "QuotaList"), "The quotas."),
        needs=READ_WORKSPACE,
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/audit",
        list_audit,
        "listAuditEvents",
        "Workspaces",
        (200, Paged(AuditEvent), "One page of events."),
        needs=READ_AUDIT,
        paginated=True,
        parameters=(
            {
                "name": "action",
                "in": "query",
                "required": False,
                "description": "Only events of this action, e.g. `backup.update`.",
                "schema": {"type": "string"},
            },
            {
                "name": "actor_id",
                "in": "query",
                "required": False,
                "description": "Only events of this actor.",
                "schema": {"type": "string", "format": "uuid"},
            },
            {
                "name": "since",
                "in": "query",
                "required": False,
                "description": (
                    "Only events at or after this RFC 3339 timestamp (with a time zone; `Z` for "
                    "UTC)."
                ),
                "schema": {"type": "string", "format": "date-time"},
            },
        ),
        errors={
            "invalid_request": (
                "`actor_id` is not a UUID, or `since` is not an RFC 3339 timestamp with a time zone"
            )
        },
    ),
]
