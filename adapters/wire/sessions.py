"""The caller, its sessions and the permission catalog."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Email, Uri
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.oauth import CLIENT_ID
from strongroom.domain.permissions import Permission
from strongroom.domain.users import User as DomainUser


@attrs.frozen
class PermissionEntry:
    """A permission of the catalog."""

    __schema_name__: ClassVar[str] = "Permission"
    slug: Permission
    description: str


@view_of(DomainUser)
@attrs.frozen
class User:
    """A person."""

    id: UUID
    email: Email
    name: str


@attrs.frozen
class Principal:
    """Who calls."""

    type: Literal["user", "api_key", "worker"]
    id: UUID


@attrs.frozen
class Me:
    """The caller."""

    principal: Principal = attrs.field(metadata=meta(get="actor"))
    user: User | None = attrs.field(metadata=meta(optional=True))
    """Present only when the caller is a person."""
    workspace_id: UUID | None
    """The workspace the credential is scoped to."""
    permissions: list[Permission] = attrs.field(
        metadata=meta(get=lambda caller: sorted(caller.permissions))
    )
    """Sorted; empty when no workspace is selected."""


# The view of a class outside the domain: bound in adapters/http/bindings.py.
@attrs.frozen
class CliConfig:
    """Absolute URLs built from `STRONGROOM_PUBLIC_URL`, else from the request's own scheme
    and host."""

    issuer: Uri
    client_id: str = attrs.field(metadata=meta(schema={"examples": [CLIENT_ID]}))
    device_authorization_endpoint: Uri
    token_endpoint: Uri
    scopes: list[str]
    authorization_endpoint: Uri | None = None
    """The authorization-code grant with PKCE, for browsers (the dashboard's client is
    `strongroom-web` with the built-in provider); null when the provider has none."""


@attrs.frozen
class SwitchWorkspace:
    """`POST /v1/auth/switch`."""

    workspace_id: UUID


# The view of a class outside the domain: bound in adapters/http/bindings.py.
@attrs.frozen
class Session:
    """A session and its token."""

    __location__: ClassVar[str] = "/v1/me"

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str = attrs.field(repr=False)
    """The session token (`bks_...`), the bearer for `/v1`; shown only here."""
    expires_at: datetime
    user: User
    workspace_id: UUID | None
    """The workspace the session is scoped to; null after sign-in."""
