"""Members and roles of a workspace."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.webkit.declared import IfMatch
from strongroom.adapters.wire.members import Member, MemberUpdate, Role, RoleCreate, RoleUpdate
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Role as DomainRole
from strongroom.domain.role_pages import decode_role_cursor, page_of_roles
from strongroom.domain.workspaces import Member as DomainMember
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
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
async def list_members(
    facade: Strongroom, grant: Grant, wid: UUID, page: PageRequest
) -> Page[DomainMember]:
    """List members

    The workspace's members, newest first by joining time. Needs `members:read`."""
    return await facade.members.list(grant, wid, page)


@routes.get("/v1/workspaces/{wid}/members/{id}", Member, "The member.", READ_MEMBERS)
async def get_member(facade: Strongroom, grant: Grant, wid: UUID, id: UUID) -> DomainMember:
    """Read a member

    One member of the workspace, with the `ETag` a conditional change of their role sends
    as `If-Match`. Needs `members:read`."""
    return await facade.members.get(grant, wid, id)


@routes.patch("/v1/workspaces/{wid}/members/{id}", Member, "The member.", UPDATE_MEMBER)
async def update_member(
    facade: Strongroom, grant: Grant, id: UUID, body: MemberUpdate, precondition: IfMatch
) -> DomainMember:
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
    wid = grant.workspace_id  # the path's, which the grant checked
    return await facade.members.change_role(grant, wid, id, body.role, precondition=precondition)


@routes.delete("/v1/workspaces/{wid}/members/{id}", "Removed.", DELETE_MEMBER, empty_body=True)
async def delete_member(facade: Strongroom, grant: Grant, wid: UUID, id: UUID) -> None:
    """Remove a member

    Ends the membership; the person's sessions scoped to the workspace stop working.
    Needs `members:write`; the caller must hold every permission of the member's role.
    The last admin cannot be removed.

    Errors:
    - `forbidden`: the new role, or the member's current role, holds a permission the caller
      lacks
    - `last_admin`: the member is the last admin"""
    await facade.members.remove(grant, wid, id)


@routes.get("/v1/workspaces/{wid}/roles", Paged(Role), "The roles.", READ_ROLES)
async def list_roles(ctx: ApiContext, grant: Grant, wid: UUID) -> Any:
    """List roles

    Built-in roles, then the workspace's custom roles by slug, a page at a time (the
    cursor is the last slug shown). Needs `roles:read`."""
    limit = ctx.limit()
    cursor = ctx.request.query_params.get("cursor")
    after = None if cursor is None else decode_role_cursor(cursor)
    roles, next_cursor = page_of_roles(await ctx.facade.roles.list(grant, wid), limit, after)
    return {"data": roles, "next_cursor": next_cursor}


@routes.create("/v1/workspaces/{wid}/roles", Role, "The new role.", CREATE_ROLE)
async def create_role(
    facade: Strongroom,
    grant: Grant,
    wid: UUID,
    body: RoleCreate,
    idempotency: IdempotencyKey | None,
) -> DomainRole:
    """Create a custom role

    A named set of permissions, each of which the caller must hold. Needs `roles:write`.

    Errors:
    - `invalid_request`: `slug` is not a well-formed role slug; bad `name`
    - `forbidden`: a permission of the role is not the caller's own
    - `validation_failed`: a permission outside the catalog
    - `name_taken`: the workspace has a role with this slug (built-in too)"""
    return await facade.roles.create(
        grant, wid, body.slug, body.name, body.permissions, idempotency=idempotency
    )


@routes.get("/v1/workspaces/{wid}/roles/{slug}", Role, "The role.", READ_ROLES)
async def get_role(facade: Strongroom, grant: Grant, wid: UUID, slug: str) -> DomainRole:
    """Read a role

    One built-in or custom role. Needs `roles:read`."""
    return await facade.roles.get(grant, wid, slug)


@routes.patch("/v1/workspaces/{wid}/roles/{slug}", Role, "The role.", UPDATE_ROLE)
async def update_role(
    facade: Strongroom, grant: Grant, wid: UUID, slug: str, body: RoleUpdate, precondition: IfMatch
) -> DomainRole:
    """Change a custom role

    Rename it or replace its permissions (each of which the caller must hold). Members
    holding it get the new permissions on their next request. Needs `roles:write`.

    Errors:
    - `forbidden`: a permission of the role, old or new, is not the caller's own
    - `validation_failed`: a permission outside the catalog
    - `invalid_state`: the role is built-in (`admin`, `member`, `viewer`)"""
    return await facade.roles.update(
        grant, wid, slug, name=body.name, permissions=body.permissions, precondition=precondition
    )


@routes.delete("/v1/workspaces/{wid}/roles/{slug}", "Deleted.", DELETE_ROLE, empty_body=True)
async def delete_role(facade: Strongroom, grant: Grant, wid: UUID, slug: str) -> None:
    """Delete a custom role

    Refused while members or pending invitations hold it. Needs `roles:write` and every
    permission of the role.

    Errors:
    - `forbidden`: the role holds a permission the caller lacks
    - `invalid_state`: the role is built-in (`admin`, `member`, `viewer`); members or pending
      invitations hold the role"""
    await facade.roles.delete(grant, wid, slug)
