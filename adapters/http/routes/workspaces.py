"""Workspaces, their quotas and their audit trail."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.declare import UUID_SCHEMA, OnePage, Paged, Routes, parameter
from strongroom.adapters.webkit.declared import IfMatch
from strongroom.adapters.wire.audit import AuditEvent
from strongroom.adapters.wire.workspaces import (
    MemberWorkspace,
    Quota,
    Workspace,
    WorkspaceCreate,
    WorkspaceUpdate,
)
from strongroom.domain.audit import AuditEvent as DomainAuditEvent
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.timestamps import parse_timestamp
from strongroom.domain.workspaces import Workspace as DomainWorkspace
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.audit_trail import READ_AUDIT
from strongroom.ports.driving.workspaces import (
    CREATE_REFUSAL,
    DELETE_WORKSPACE,
    LIST_REFUSAL,
    READ_WORKSPACE,
    UPDATE_WORKSPACE,
)

routes = Routes("Workspaces")


@routes.get(
    "/v1/workspaces", Paged(MemberWorkspace), "One page of memberships.", person=LIST_REFUSAL
)
async def list_workspaces(facade: Strongroom, caller: Caller, page: PageRequest) -> Page[Any]:
    """List my workspaces

    The caller's memberships, newest workspace first. A person only; no permission
    check."""
    return await facade.workspaces.memberships(caller, page)


@routes.create("/v1/workspaces", Workspace, "The new workspace.", person=CREATE_REFUSAL)
async def create_workspace(
    facade: Strongroom, caller: Caller, body: WorkspaceCreate, idempotency: IdempotencyKey | None
) -> DomainWorkspace:
    """Create a workspace

    Provisions an organization, a customer record and a storage namespace
    (all-or-nothing); the creator becomes `admin`; the workspace starts in billing state
    `trial`. A person only, no permission check; at most 5 workspaces per person.

    Errors:
    - `quota_exceeded`: the person already created 5 workspaces (`workspaces_per_user`)
    - `upstream_unavailable`: the identity provider, billing or object storage failed; nothing
      is left behind"""
    return await facade.workspaces.create(caller, body.name, idempotency=idempotency)


@routes.get("/v1/workspaces/{wid}", Workspace, "The workspace.", READ_WORKSPACE)
async def get_workspace(facade: Strongroom, caller: Caller, wid: UUID) -> DomainWorkspace:
    """Read a workspace

    One workspace."""
    return await facade.workspaces.get(caller, wid)


@routes.patch("/v1/workspaces/{wid}", Workspace, "The updated workspace.", UPDATE_WORKSPACE)
async def update_workspace(
    facade: Strongroom, grant: Grant, wid: UUID, body: WorkspaceUpdate, precondition: IfMatch
) -> DomainWorkspace:
    """Rename a workspace

    Change the workspace's name.

    Errors:
    - `billing_restricted`: the workspace's billing state (`blocked`) refuses configuration
      changes"""
    return await facade.workspaces.rename(grant, wid, body.name, precondition=precondition)


@routes.delete("/v1/workspaces/{wid}", "Deleted.", DELETE_WORKSPACE, empty_body=True)
async def delete_workspace(facade: Strongroom, grant: Grant, wid: UUID) -> None:
    """Delete a workspace

    Removes the workspace and its records, its audit trail included; irreversible. Its
    sessions, API keys and workers stop working. Allowed in every billing state.
    Artifacts already in the customer's own buckets stay there.

    Errors:
    - `artifact_locked`: an artifact in service storage is inside its lock window"""
    await facade.workspaces.delete(grant, wid)


@routes.get(
    "/v1/workspaces/{wid}/quotas", OnePage(Quota, "QuotaList"), "The quotas.", READ_WORKSPACE
)
async def list_quotas(facade: Strongroom, caller: Caller, wid: UUID) -> Any:
    """Quotas

    Every quota resource's effective limit (0 means unlimited) and current usage. Always
    one page."""
    return {"data": await facade.workspaces.quotas(caller, wid), "next_cursor": None}


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
async def list_audit_events(ctx: ApiContext, grant: Grant, wid: UUID) -> Page[DomainAuditEvent]:
    """Audit trail

    The workspace's audit events, newest first: every mutation and every mutation
    refused for a missing permission (`outcome: denied`).

    Errors:
    - `invalid_request`: `actor_id` is not a UUID, or `since` is not an RFC 3339 timestamp with
      a time zone"""
    filters = _audit_filter(ctx)
    return await ctx.facade.audit.events(grant, wid, filters, ctx.page())
