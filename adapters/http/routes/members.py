"""Members and roles of a workspace.

Every handler runs the contract's order of checks: credential, path ids, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.conventions import if_match, located, tagged
from strongroom.adapters.http.openapi import Paged, api
from strongroom.adapters.http.shapes import Member, MemberUpdate, Role, RoleCreate, RoleUpdate
from strongroom.domain.permissions import check_role_slug
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


def _path_slug(ctx: ApiContext) -> str:
    slug: str = ctx.request.path_params["slug"]
    return check_role_slug(slug)


@endpoint
async def list_members(ctx: ApiContext) -> Response:
    """List members

    The workspace's members, newest first by joining time. Needs `members:read`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, READ_MEMBERS, workspace_id=workspace_id)
    page = await ctx.facade.members.list(grant, workspace_id, ctx.page())
    return answer(page)


@tagged
@endpoint
async def get_member(ctx: ApiContext) -> Response:
    """Read a member

    One member of the workspace, with the `ETag` a conditional change of their role sends
    as `If-Match`. Needs `members:read`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    user_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, READ_MEMBERS, workspace_id=workspace_id)
    return answer(await ctx.facade.members.get(grant, workspace_id, user_id))


@tagged
@endpoint
async def patch_member(ctx: ApiContext) -> Response:
    """Change a member's role

    Gives the member another role (built-in or custom). Needs `members:write`; the
    caller must hold every permission of the new role and of the member's current one.
    The last admin cannot be demoted."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    user_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(
        caller, UPDATE_MEMBER, workspace_id=workspace_id, target_id=user_id
    )
    body = ctx.json(MemberUpdate)
    precondition = if_match(ctx.request)
    member = await ctx.facade.members.change_role(
        grant, workspace_id, user_id, body.role, precondition=precondition
    )
    return answer(member)


@endpoint
async def delete_member(ctx: ApiContext) -> Response:
    """Remove a member

    Ends the membership; the person's sessions scoped to the workspace stop working.
    Needs `members:write`; the caller must hold every permission of the member's role.
    The last admin cannot be removed."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    user_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(
        caller, DELETE_MEMBER, workspace_id=workspace_id, target_id=user_id
    )
    ctx.empty_body()
    await ctx.facade.members.remove(grant, workspace_id, user_id)
    return no_content()


@endpoint
async def list_roles(ctx: ApiContext) -> Response:
    """List roles

    Built-in roles, then the workspace's custom roles by slug, a page at a time (the
    cursor is the last slug shown). Needs `roles:read`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, READ_ROLES, workspace_id=workspace_id)
    limit = ctx.limit()
    cursor = ctx.request.query_params.get("cursor")
    after = None if cursor is None else decode_role_cursor(cursor)
    roles, next_cursor = page_of_roles(
        await ctx.facade.roles.list(grant, workspace_id), limit, after
    )
    return answer({"data": roles, "next_cursor": next_cursor})


@located("/v1/workspaces/{wid}/roles/{slug}")
@endpoint
async def create_role(ctx: ApiContext) -> Response:
    """Create a custom role

    A named set of permissions, each of which the caller must hold. Needs `roles:write`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, CREATE_ROLE, workspace_id=workspace_id)
    body = ctx.json(RoleCreate)
    role = await ctx.facade.roles.create(
        grant, workspace_id, body.slug, body.name, body.permissions, idempotency=ctx.idempotency()
    )
    return answer(role, 201)


@tagged
@endpoint
async def get_role(ctx: ApiContext) -> Response:
    """Read a role

    One built-in or custom role. Needs `roles:read`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    grant = await ctx.facade.access.authorize(caller, READ_ROLES, workspace_id=workspace_id)
    return answer(await ctx.facade.roles.get(grant, workspace_id, slug))


@tagged
@endpoint
async def patch_role(ctx: ApiContext) -> Response:
    """Change a custom role

    Rename it or replace its permissions (each of which the caller must hold). Members
    holding it get the new permissions on their next request. Needs `roles:write`."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    grant = await ctx.facade.access.authorize(
        caller, UPDATE_ROLE, workspace_id=workspace_id, target_id=slug
    )
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


@endpoint
async def delete_role(ctx: ApiContext) -> Response:
    """Delete a custom role

    Refused while members or pending invitations hold it. Needs `roles:write` and every
    permission of the role."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    slug = _path_slug(ctx)
    grant = await ctx.facade.access.authorize(
        caller, DELETE_ROLE, workspace_id=workspace_id, target_id=slug
    )
    ctx.empty_body()
    await ctx.facade.roles.delete(grant, workspace_id, slug)
    return no_content()


routes: list[BaseRoute] = [
    api(
        "GET",
        "/v1/workspaces/{wid}/members",
        list_members,
        "listMembers",
        "Members",
        (200, Paged(Member), "One page of members."),
        needs=READ_MEMBERS,
        paginated=True,
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/members/{id}",
        get_member,
        "getMember",
        "Members",
        (200, Member, "The member."),
        needs=READ_MEMBERS,
        errors={"not_found": "no such member in the workspace"},
    ),
    api(
        "PATCH",
        "/v1/workspaces/{wid}/members/{id}",
        patch_member,
        "updateMember",
        "Members",
        (200, Member, "The member."),
        needs=UPDATE_MEMBER,
        body=MemberUpdate,
        billing="config",
        errors={
            "invalid_request": "`role` is not a well-formed role slug",
            "forbidden": (
                "the new role, or the member's current role, holds a permission the caller lacks"
            ),
            "not_found": "no such member of the workspace",
            "validation_failed": "the role does not exist in the workspace",
            "last_admin": "the member is the last admin",
        },
    ),
    api(
        "DELETE",
        "/v1/workspaces/{wid}/members/{id}",
        delete_member,
        "deleteMember",
        "Members",
        (204, None, "Removed."),
        needs=DELETE_MEMBER,
        empty_body=True,
        billing="config",
        errors={
            "forbidden": (
                "the new role, or the member's current role, holds a permission the caller lacks"
            ),
            "not_found": "no such member of the workspace",
            "last_admin": "the member is the last admin",
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/roles",
        list_roles,
        "listRoles",
        "Members",
        (
            200,
            Paged(Role),
            "The roles.",
        ),
        needs=READ_ROLES,
    ),
    api(
        "POST",
        "/v1/workspaces/{wid}/roles",
        create_role,
        "createRole",
        "Members",
        (201, Role, "The new role."),
        needs=CREATE_ROLE,
        body=RoleCreate,
        idempotent=True,
        billing="config",
        errors={
            "invalid_request": "`slug` is not a well-formed role slug; bad `name`",
            "forbidden": "a permission of the role is not the caller's own",
            "validation_failed": "a permission outside the catalog",
            "name_taken": "the workspace has a role with this slug (built-in too)",
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/roles/{slug}",
        get_role,
        "getRole",
        "Members",
        (200, Role, "The role."),
        needs=READ_ROLES,
        errors={
            "invalid_request": "`slug` in the path is not a well-formed role slug",
            "not_found": "no such role in the workspace",
        },
    ),
    api(
        "PATCH",
        "/v1/workspaces/{wid}/roles/{slug}",
        patch_role,
        "updateRole",
        "Members",
        (200, Role, "The role."),
        needs=UPDATE_ROLE,
        body=RoleUpdate,
        billing="config",
        errors={
            "invalid_request": "`slug` in the path is not a well-formed role slug",
            "forbidden": "a permission of the role, old or new, is not the caller's own",
            "not_found": "no such role in the workspace",
            "validation_failed": "a permission outside the catalog",
            "invalid_state": "the role is built-in (`admin`, `member`, `viewer`)",
        },
    ),
    api(
        "DELETE",
        "/v1/workspaces/{wid}/roles/{slug}",
        delete_role,
        "deleteRole",
        "Members",
        (204, None, "Deleted."),
        needs=DELETE_ROLE,
        empty_body=True,
        billing="config",
        errors={
            "invalid_request": "`slug` in the path is not a well-formed role slug",
            "forbidden": "the role holds a permission the caller lacks",
            "not_found": "no such role in the workspace",
            "invalid_state": (
                "the role is built-in (`admin`, `member`, `viewer`); members or pending "
                "invitations hold the role"
            ),
        },
    ),
]
