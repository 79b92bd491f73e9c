"""Members of a workspace and its roles."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Email, Name, RoleSlug
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import workspaces
from strongroom.domain.backups import UNSET, Unset
from strongroom.domain.permissions import Permission
from strongroom.domain.permissions import Role as DomainRole


@view_of(workspaces.Member)
@attrs.frozen
class Member:
    """A member of the workspace; `user_id` is the `{id}` of its routes."""

    user_id: UUID
    email: Email
    name: str
    role: RoleSlug
    joined_at: datetime


@attrs.frozen
class MemberUpdate:
    """`PATCH /v1/workspaces/{wid}/members/{id}`."""

    role: RoleSlug


@view_of(DomainRole)
@attrs.frozen
class Role:
    """A built-in or custom role."""

    __location__: ClassVar[str] = "/v1/workspaces/{wid}/roles/{slug}"

    slug: RoleSlug
    name: str
    permissions: frozenset[Permission]
    builtin: bool
    """Built-in roles (`admin`, `member`, `viewer`) are immutable."""


PERMISSIONS = {"type": "array", "items": {"$ref": "#/components/schemas/PermissionSlug"}}
MINE = "A subset of the caller's own permissions (more: 403)"


@attrs.frozen
class RoleCreate:
    """`POST /v1/workspaces/{wid}/roles`."""

    slug: RoleSlug
    name: Name
    permissions: list[str] = attrs.field(metadata=meta(f"{MINE}.", schema=PERMISSIONS))


@attrs.frozen
class RoleUpdate:
    """`PATCH /v1/workspaces/{wid}/roles/{slug}`: every field is optional."""

    name: Name | Unset = UNSET
    permissions: list[str] | Unset = attrs.field(default=UNSET, metadata=meta(schema=PERMISSIONS))
