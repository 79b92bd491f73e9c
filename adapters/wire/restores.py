"""Restores of an artifact into a target, run by the service."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.sources import PostgresCredentials, S3Credentials
from strongroom.adapters.wire.views import meta, view_of, write_only
from strongroom.domain.backups import Source
from strongroom.domain.restores import MAX_RESTORE_ERROR, RestoreState
from strongroom.domain.restores import Restore as DomainRestore


@attrs.frozen
class RestoreCreate:
    """`POST /v1/artifacts/{aid}/restores`."""

    __example_fields__: ClassVar[tuple[str, ...]] = ("target", "credentials")
    target: Source
    """Where to restore: a bucket (`s3`, for an artifact of an `s3` source; created when it does
    not exist; objects go to `prefix` + their key) or an existing, empty PostgreSQL database
    (`postgres`, for an artifact of a `postgres` source). The type must be the artifact's source
    type (422 otherwise)."""
    credentials: Mapping[str, str] = attrs.field(
        metadata=write_only(S3Credentials | PostgresCredentials)
    )
    """The target's credentials, in the shape of its type. Write-only: never returned, logged or
    audited; encrypted at rest until the restore finishes, then erased."""


@view_of(DomainRestore)
@attrs.frozen
class Restore:
    """A restore of an artifact into a target, run by the service."""

    id: UUID
    artifact_id: UUID
    state: RestoreState
    """`queued` until the service takes it, `running`, then `succeeded` or `failed`."""
    target: Source
    """Where the artifact goes (never a secret)."""
    error: str | None = attrs.field(metadata=meta(schema={"maxLength": MAX_RESTORE_ERROR}))
    """Why it failed, in words free of secrets; null unless `failed`."""
    created_at: datetime
    finished_at: datetime | None
    """Null until it succeeds or fails."""
