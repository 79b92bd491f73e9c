"""Members and roles of a workspace.

Every handler runs the contract's order of checks: credential, path ids, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from typing import Any

import attrs
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http import presenters
from strongroom.adapters.http.context import ApiContext, endpoint, json_response, no_content
from strongroom.domain.errors import InvalidRequestError, UnknownFieldError
from strongroom.domain.role_pages import decode_role_cursor, page_of_roles
from strongroom.ports.driving.members import (
    CREATE_ROLE,
    DELETE_MEMBER,
    DELETE_ROLE,
    READ_MEMBERS,
    READ_ROLES,
    UNSET,
    UPDATE_MEMBER,
    UPDATE_ROLE,
    check_role_slug,
)


@attrs.frozen
class MemberUpdateBody:
    """``PATCH /v1/workspaces/{wid}/members/{id}``."""

    role: str


@attrs.frozen
class RoleCreateBody:
    """``POST /v1/workspaces/{wid}/roles``."""

    slug: str
    name: str
    permissions: list[str]


def _path_slug(ctx: ApiContext) -> str:
    slug: str = ctx.request.path_params["slug"]
    return check_role_slug(slug)


@endpoint
async def list_members(ctx: ApiContext) -> Response:
    """The workspace's members, newest first."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, READ_MEMBERS, workspace_id=workspace_id)
    page = await ctx.facade.members.list(caller, workspace_id, ctx.page())
    return json_response(presenters.listing(page, presenters.member))


@endpoint
async def patch_member(ctx: ApiContext) -> Response:
    """Change a member's role."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    user_id = ctx.path_id("id")
    await ctx.facade.access.authorize(
        caller, UPDATE_MEMBER, workspace_id=workspace_id, target_id=user_id
    )
    body = ctx.json(MemberUpdateBody)
    member = await ctx.facade.members.change_role(caller, workspace_id, user_id, body.role)
    return json_response(presenters.member(member))


@endpoint
async def delete_member(ctx: ApiContext) -> Response:
    """Remove a member from the workspace."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    user_id = ctx.path_id("id")
    await ctx.facade.access.authorize(
        caller, DELETE_MEMBER, workspace_id=workspace_id, target_id=user_id
    )
    ctx.empty_body()
    await ctx.facade.members.remove(caller, workspace_id, user_id)
    return no_content()


@endpoint
async def list_roles(ctx: ApiContext) -> Response:
    """Built-in roles, then custom roles by slug, a page at a time (keyed by slug)."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, READ_ROLES, workspace_id=workspace_id)
    limit = ctx.limit()
    cursor = ctx.request.query_params.get("cursor")
    after = None if cursor is None else decode_role_cursor(cursor)
    roles = await ctx.facade.roles.list(caller, workspace_id)
    return json_response(presenters.roles(*page_of_roles(roles, limit, after)))


@endpoint
async def create_role(ctx: ApiContext) -> Response:
    """Create a custom role."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, CREATE_ROLE, workspace_id=workspace_id)
    body = ctx.json(RoleCreateBody)
    role = await ctx.facade.roles.create(
        caller,
        workspace_id,
        body.slug,
        body.name,
        body.permissions,
        idempotency=ctx.idempotency(presenters.role),
    )
    return json_response(presenters.role(role), 201)


@endpoint
async def get_role(ctx: ApiContext) -> Response:
    """One role."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    await ctx.facade.access.authorize(caller, READ_ROLES, workspace_id=workspace_id)
    return json_response(presenters.role(await ctx.facade.roles.get(caller, workspace_id, slug)))


def _role_changes(body: dict[str, Any]) -> dict[str, Any]:
    unknown = set(body) - {"name", "permissions"}
    if unknown:
        raise UnknownFieldError(unknown)
    changes: dict[str, Any] = {"name": UNSET, "permissions": UNSET}
    if "name" in body:
        if type(body["name"]) is not str:
            raise InvalidRequestError("invalid value for name: expected a string")
        changes["name"] = body["name"]
    if "permissions" in body:
        value = body["permissions"]
        if type(value) is not list or any(type(item) is not str for item in value):
            raise InvalidRequestError("invalid value for permissions: expected an array of strings")
        changes["permissions"] = value
    return changes


@endpoint
async def patch_role(ctx: ApiContext) -> Response:
    """Rename a custom role or change its permissions."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    await ctx.facade.access.authorize(
        caller, UPDATE_ROLE, workspace_id=workspace_id, target_id=slug
    )
    changes = _role_changes(ctx.json_object())
    role = await ctx.facade.roles.update(caller, workspace_id, slug, **changes)
    return json_response(presenters.role(role))


@endpoint
async def delete_role(ctx: ApiContext) -> Response:
    """Delete a custom role nobody holds."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    await ctx.facade.access.authorize(
        caller, DELETE_ROLE, workspace_id=workspace_id, target_id=slug
    )
    ctx.empty_body()
    await ctx.facade.roles.delete(caller, workspace_id, slug)
    return no_content()


routes: list[BaseRoute] = [
    Route("/v1/workspaces/{wid}/members", list_members, methods=["GET"]),
    Route("/v1/workspaces/{wid}/members/{id}", patch_member, methods=["PATCH"]),
    Route("/v1/workspaces/{wid}/members/{id}", delete_member, methods=["DELETE"]),
    Route("/v1/workspaces/{wid}/roles", list_roles, methods=["GET"]),
    Route("/v1/workspaces/{wid}/roles", create_role, methods=["POST"]),
    Route("/v1/workspaces/{wid}/roles/{slug}", get_role, methods=["GET"]),
    Route("/v1/workspaces/{wid}/roles/{slug}", patch_role, methods=["PATCH"]),
    Route("/v1/workspaces/{wid}/roles/{slug}", delete_role, methods=["DELETE"]),
]
