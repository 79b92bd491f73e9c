"""API keys and workers: machine credentials of a workspace."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.members import MINE, PERMISSIONS
from strongroom.adapters.wire.scalars import SEEN, Name
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.machines import ApiKey as DomainApiKey
from strongroom.domain.machines import Worker as DomainWorker
from strongroom.domain.permissions import Permission


@attrs.frozen
class ApiKeyCreate:
    """`POST /v1/api-keys`."""

    name: Name
    permissions: list[str] = attrs.field(
        metadata=meta(
            f"{MINE}; slugs outside the catalog: 422 `validation_failed`.", schema=PERMISSIONS
        )
    )
    expires_at: datetime | None = None
    """Optional; after it the key answers 401. Must be in the future."""


@view_of(DomainApiKey)
@attrs.frozen
class ApiKey:
    """An API key; its token is never shown again after creation."""

    __location__: ClassVar[str] = "/v1/api-keys/{id}"

    id: UUID
    name: str
    permissions: frozenset[Permission]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None = attrs.field(metadata=meta(SEEN))


@attrs.frozen
class ApiKeyWithToken(ApiKey):
    """A new API key with its token."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str = attrs.field(default="", repr=False)
    """The key's bearer token (`bkk_...`), shown only here."""


@attrs.frozen
class WorkerCreate:
    """`POST /v1/workers`."""

    name: Name


@view_of(DomainWorker)
@attrs.frozen
class Worker:
    """A worker; its token is never shown again."""

    __location__: ClassVar[str] = "/v1/workers/{id}"

    id: UUID
    name: str
    created_at: datetime
    last_seen_at: datetime | None = attrs.field(metadata=meta(SEEN))


@attrs.frozen
class WorkerWithToken(Worker):
    """A worker with its new token."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str = attrs.field(default="", repr=False)
    """The worker's bearer token (`bkw_...`), shown only here; a rotation ends the previous one at
    once."""
