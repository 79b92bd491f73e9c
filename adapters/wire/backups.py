"""Backups: the create and update requests and the backup itself."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Name
from strongroom.adapters.wire.sources import PostgresCredentials, S3Credentials
from strongroom.adapters.wire.views import meta, view_of, write_only
from strongroom.domain import backups
from strongroom.domain.backups import (
    UNSET,
    BackupChanges,
    BackupKind,
    BackupState,
    Destination,
    Freshness,
    RetentionPolicy,
    Schedule,
    Source,
    Unset,
)
from strongroom.domain.drill_policy import SERVICE_TARGET, DrillPolicy, DrillTarget
from strongroom.domain.durations import Duration
from strongroom.domain.encryption import MAX_RECIPIENTS, BackupFormat, Encryption


@view_of(Encryption)
@attrs.frozen
class EncryptionShape:
    """The age X25519 recipients (public keys) a snapshot backup's new runs are sealed to."""

    __schema_name__: ClassVar[str] = "Encryption"
    recipients: list[str] = attrs.field(
        metadata=meta(
            schema={
                "minItems": 1,
                "maxItems": MAX_RECIPIENTS,
                "examples": [["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"]],
            }
        )
    )
    """1 to 10 recipients, each `age1` and bech32 (as `age-keygen` prints it); a malformed one
    gives 422 `validation_failed` naming its index; duplicates are removed, order kept."""


@view_of(Freshness)
@attrs.frozen
class FreshnessPolicy:
    """The backup's recovery point objective (contract 16)."""

    max_age: Duration = attrs.field(metadata=meta(schema={"examples": ["P1D"]}))
    """Longer than zero: without a successful run newer than this the backup is `late`."""


@view_of(DrillTarget)
@attrs.frozen
class DrillTargetShape:
    """Where a drill restores: a scratch target the service owns (a database it creates
    and drops, a directory of its own); a drill never writes to the customer's systems."""

    __schema_name__: ClassVar[str] = "DrillTarget"
    type: str = attrs.field(default="service", metadata=meta(schema={"examples": ["service"]}))
    """`service`, the only type offered (the default); another gives 422
    `validation_failed`."""


@view_of(DrillPolicy)
@attrs.frozen
class DrillPolicyShape:
    """Scheduled restore drills of a cloud backup (contract 16): at each slot of `schedule`
    the service queues one drill, as `POST /v1/backups/{bid}/drills` does (a slot is skipped
    while a drill of the backup is queued or running; a paused or draft backup is not
    drilled)."""

    __schema_name__: ClassVar[str] = "DrillPolicy"
    schedule: Schedule
    """The same grammar and time zone rules as the backup's own `schedule`."""
    target: DrillTarget = SERVICE_TARGET
    """Where the drill restores; `{"type": "service"}` when absent."""


@attrs.frozen
class BackupCreate:
    """`POST /v1/workspaces/{wid}/backups`."""

    # The example is a local backup, which takes no drill (cloud backups only).
    __example_fields__: ClassVar[tuple[str, ...]] = ("name", "kind", "encryption")

    name: Name
    kind: BackupKind
    """Immutable once set."""
    encryption: Encryption | None = None
    """Local and manual backups: the age recipients (public keys) its snapshots are sealed
    to; set, the backup's `format` is `snapshot`."""
    drill: DrillPolicy | None = None
    """Cloud backups only (422 `validation_failed` otherwise): scheduled restore drills,
    from the moment the backup is `active`."""


@attrs.frozen
class BackupUpdate:
    """Every field is optional; `kind` cannot be changed."""

    __unknown_notes__: ClassVar[Mapping[str, str]] = {
        "kind": " (the kind of a backup cannot be changed)"
    }
    __example_fields__: ClassVar[tuple[str, ...]] = (
        "source",
        "credentials",
        "schedule",
        "retention",
    )
    name: Name | Unset = UNSET
    source: Source | Unset = UNSET
    """Cloud backups only."""
    credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET,
        metadata=write_only(S3Credentials | PostgresCredentials),
    )
    """Cloud backups only; the shape follows the source type. Write-only: never returned, logged
    or audited; encrypted at rest."""
    schedule: Schedule | Unset | None = UNSET
    """Not on manual backups; null removes it."""
    worker_id: UUID | Unset = UNSET
    """Local backups only: a worker of this workspace."""
    retention: RetentionPolicy | Unset = UNSET
    """Write-once: an identical policy is accepted again, another gives 409
    `retention_immutable`."""
    destination: Destination | Unset = UNSET
    destination_credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET, metadata=write_only(S3Credentials)
    )
    """Only with a `customer_s3` destination (required when first setting one). Write-only."""
    encryption: Encryption | Unset | None = UNSET
    """Local and manual backups: the age recipients new runs are sealed to (earlier runs stay
    readable by their own); set, the backup becomes a `snapshot` backup, and stays one
    (`null` then gives 409 `invalid_state`)."""
    freshness: Freshness | Unset | None = UNSET
    """The recovery point objective: `{"max_age": "P1D"}` makes the backup `late` when its
    newest successful run is older; null removes it (then two missed schedule slots do)."""
    drill: DrillPolicy | Unset | None = UNSET
    """Cloud backups only (422 `validation_failed` otherwise): scheduled restore drills;
    null stops them."""

    def changes(self) -> BackupChanges:
        """The domain's changes: the fields share their names (the shapes of the
        credentials are checked as they are built)."""
        fields = attrs.fields(BackupUpdate)
        return BackupChanges(**{field.name: getattr(self, field.name) for field in fields})


@view_of(backups.Backup)
@attrs.frozen
class Backup:
    """A backup. Credentials are write-only and never appear."""

    __location__: ClassVar[str] = "/v1/backups/{id}"

    id: UUID
    workspace_id: UUID
    name: str
    kind: BackupKind
    state: BackupState
    """`active` once the kind's configuration is complete: cloud needs `source`, `credentials` and
    `retention`; local needs `worker_id` and `retention`; manual needs `retention`."""
    paused: bool
    """A paused backup keeps its state and is not scheduled."""
    source: Source | None
    has_credentials: bool
    """Whether source credentials are stored (never returned)."""
    schedule: Schedule | None
    worker_id: UUID | None
    retention: RetentionPolicy | None
    destination: Destination
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # Defaults: a client reads an answer of a server from before snapshots (contract 14).
    format: BackupFormat = BackupFormat.ARCHIVE
    """`snapshot` exactly when `encryption` is set (deduplicated, end-to-end encrypted
    directory snapshots), else `archive`."""
    encryption: Encryption | None = None
    """The age recipients (public keys) snapshots are sealed to; null for an archive backup."""
    freshness: Freshness | None = None
    """The recovery point objective (`GET /v1/workspaces/{wid}/health`); null without one."""
    drill: DrillPolicy | None = None
    """Scheduled restore drills (`GET /v1/backups/{bid}/drills`); null without them."""
