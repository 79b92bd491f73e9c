"""Members and roles of a workspace."""

from __future__ import annotations

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer, no_content
from strongroom.adapters.http.conventions import if_match
from strongroom.adapters.http.openapi import Paged, Routes
from strongroom.adapters.http.shapes import Member, MemberUpdate, Role, RoleCreate, RoleUpdate
from strongroom.domain.role_pages import decode_role_cursor, page_of_roles
from strongroom.ports.driving.members import (
    CREATE_ROLE,
    DELETE_MEMBER,
    DELETE_ROLE,
    READ_MEMBERS,
    READ_ROLES,
    UPDATE_MEMBER,
    UPDATE_ROLE,
)

routes = Routes("Members", billing="config")


@routes.get("/v1/workspaces/{wid}/members", Paged(Member), "One page of members.", READ_MEMBERS)
async def list_members(ctx: ApiContext) -> Response:
    """List members

    The workspace's members, newest first by joining time. Needs `members:read`."""
    grant = await ctx.grant(READ_MEMBERS)
    page = await ctx.facade.members.list(grant, ctx.path_id("wid"), ctx.page())
    return answer(page)


@routes.get("/v1/workspaces/{wid}/members/{id}", Member, "The member.", READ_MEMBERS)
async def get_member(ctx: ApiContext) -> Response:
    """Read a member

    One member of the workspace, with the `ETag` a conditional change of their role sends
    as `If-Match`. Needs `members:read`."""
    grant = await ctx.grant(READ_MEMBERS)
    return answer(await ctx.facade.members.get(grant, ctx.path_id("wid"), ctx.path_id("id")))


@routes.patch(
    "/v1/workspaces/{wid}/members/{id}", Member, "The member.", UPDATE_MEMBER, body=MemberUpdate
)
async def update_member(ctx: ApiContext) -> Response:
    """Change a member's role

    Gives the member another role (built-in or custom). Needs `members:write`; the
    caller must hold every permission of the new role and of the member's current one.
    The last admin cannot be demoted.

    Errors:
    - `invalid_request`: `role` is not a well-formed role slug
    - `forbidden`: the new role, or the member's current role, holds a permission the caller
      lacks
    - `validation_failed`: the role does not exist in the workspace
    - `last_admin`: the member is the last admin"""
    grant = await ctx.grant(UPDATE_MEMBER, "id")
    body = ctx.json(MemberUpdate)
    precondition = if_match(ctx.request)
    member = await ctx.facade.members.change_role(
        grant, ctx.path_id("wid"), ctx.path_id("id"), body.role, precondition=precondition
    )
    return answer(member)


@routes.delete("/v1/workspaces/{wid}/members/{id}", "Removed.", DELETE_MEMBER, empty_body=True)
async def delete_member(ctx: ApiContext) -> Response:
    """Remove a member

    Ends the membership; the person's sessions scoped to the workspace stop working.
    Needs `members:write`; the caller must hold every permission of the member's role.
    The last admin cannot be removed.

    Errors:
    - `forbidden`: the new role, or the member's current role, holds a permission the caller
      lacks
    - `last_admin`: the member is the last admin"""
    grant = await ctx.grant(DELETE_MEMBER, "id")
    ctx.empty_body()
    await ctx.facade.members.remove(grant, ctx.path_id("wid"), ctx.path_id("id"))
    return no_content()


@routes.get("/v1/workspaces/{wid}/roles", Paged(Role), "The roles.", READ_ROLES)
async def list_roles(ctx: ApiContext) -> Response:
    """List roles

    Built-in roles, then the workspace's custom roles by slug, a page at a time (the
    cursor is the last slug shown). Needs `roles:read`."""
    grant = await ctx.grant(READ_ROLES)
    limit = ctx.limit()
    cursor = ctx.request.query_params.get("cursor")
    after = None if cursor is None else decode_role_cursor(cursor)
    roles, next_cursor = page_of_roles(
        await ctx.facade.roles.list(grant, ctx.path_id("wid")), limit, after
    )
    return answer({"data": roles, "next_cursor": next_cursor})


@routes.create("/v1/workspaces/{wid}/roles", Role, "The new role.", CREATE_ROLE, body=RoleCreate)
async def create_role(ctx: ApiContext) -> Response:
    """Create a custom role

    A named set of permissions, each of which the caller must hold. Needs `roles:write`.

    Errors:
    - `invalid_request`: `slug` is not a well-formed role slug; bad `name`
    - `forbidden`: a permission of the role is not the caller's own
    - `validation_failed`: a permission outside the catalog
    - `name_taken`: the workspace has a role with this slug (built-in too)"""
    grant = await ctx.grant(CREATE_ROLE)
    body = ctx.json(RoleCreate)
    role = await ctx.facade.roles.create(
        grant,
        ctx.path_id("wid"),
        body.slug,
        body.name,
        body.permissions,
        idempotency=ctx.idempotency(),
    )
    return answer(role, 201)


@routes.get("/v1/workspaces/{wid}/roles/{slug}", Role, "The role.", READ_ROLES)
async def get_role(ctx: ApiContext) -> Response:
    """Read a role

    One built-in or custom role. Needs `roles:read`."""
    grant = await ctx.grant(READ_ROLES)
    workspace_id, slug = ctx.path_id("wid"), ctx.role_slug()
    return answer(await ctx.facade.roles.get(grant, workspace_id, slug))


@routes.patch("/v1/workspaces/{wid}/roles/{slug}", Role, "The role.", UPDATE_ROLE, body=RoleUpdate)
async def update_role(ctx: ApiContext) -> Response:
    """Change a custom role

    Rename it or replace its permissions (each of which the caller must hold). Members
    holding it get the new permissions on their next request. Needs `roles:write`.

    Errors:
    - `forbidden`: a permission of the role, old or new, is not the caller's own
    - `validation_failed`: a permission outside the catalog
    - `invalid_state`: the role is built-in (`admin`, `member`, `viewer`)"""
    grant = await ctx.grant(UPDATE_ROLE, "slug")
    workspace_id, slug = ctx.path_id("wid"), ctx.role_slug()
    body = ctx.json(RoleUpdate)
    role = await ctx.facade.roles.update(
        grant,
        workspace_id,
        slug,
        name=body.name,
        permissions=body.permissions,
        precondition=if_match(ctx.request),
    )
    return answer(role)


@routes.delete("/v1/workspaces/{wid}/roles/{slug}", "Deleted.", DELETE_ROLE, empty_body=True)
async def delete_role(ctx: ApiContext) -> Response:
    """Delete a custom role

    Refused while members or pending invitations hold it. Needs `roles:write` and every
    permission of the role.

    Errors:
    - `forbidden`: the role holds a permission the caller lacks
    - `invalid_state`: the role is built-in (`admin`, `member`, `viewer`); members or pending
      invitations hold the role"""
    grant = await ctx.grant(DELETE_ROLE, "slug")
    workspace_id, slug = ctx.path_id("wid"), ctx.role_slug()
    ctx.empty_body()
    await ctx.facade.roles.delete(grant, workspace_id, slug)
    return no_content()
