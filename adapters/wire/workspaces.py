"""Workspaces, the caller's memberships and the quotas."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Name
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import workspaces
from strongroom.domain.quotas import DEFAULT_LIMITS, QuotaResource
from strongroom.domain.quotas import Quota as DomainQuota


@attrs.frozen
class WorkspaceCreate:
    """`POST /v1/workspaces`."""

    name: Name


@attrs.frozen
class WorkspaceUpdate(WorkspaceCreate):
    """`PATCH /v1/workspaces/{wid}`."""


@view_of(workspaces.Workspace)
@attrs.frozen
class Workspace:
    """A single workspace."""

    __location__: ClassVar[str] = "/v1/workspaces/{id}"

    id: UUID
    name: str
    idp_org_id: str
    """The workspace's organization at the identity provider."""
    created_at: datetime
    updated_at: datetime


@view_of(workspaces.MemberWorkspace)
@attrs.frozen
class MemberWorkspace:
    """A workspace in the list of the caller's memberships."""

    id: UUID = attrs.field(metadata=meta(get="workspace.id"))
    name: str = attrs.field(metadata=meta(get="workspace.name"))
    idp_org_id: str = attrs.field(metadata=meta(get="workspace.idp_org_id"))
    role: str
    """The caller's role in the workspace, e.g. `admin`."""


@view_of(DomainQuota)
@attrs.frozen
class Quota:
    """A quota resource's effective limit and usage."""

    resource: QuotaResource
    limit: int = attrs.field(
        metadata=meta(
            "The effective limit; 0 means unlimited. Defaults: "
            + ", ".join(f"`{resource}` {limit}" for resource, limit in DEFAULT_LIMITS.items())
            + ".",
            schema={"minimum": 0},
        )
    )
    usage: int = attrs.field(metadata=meta(schema={"minimum": 0}))
