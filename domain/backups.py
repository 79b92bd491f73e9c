"""The backup aggregate: kinds and their rules, activation, pausing, write-once retention."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any, Literal
from uuid import UUID

import attrs

from strongroom.domain.cron import Schedule
from strongroom.domain.drill_policy import SERVICE_TARGET, DrillPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.encryption import BackupFormat, Encryption
from strongroom.domain.endpoints import DEFAULT_POLICY, EndpointPolicy
from strongroom.domain.errors import (
    InvalidRequestError,
    InvalidStateError,
    LockExceedsExpiryError,
    RetentionImmutableError,
    UnknownFieldError,
    ValidationFailedError,
)
from strongroom.domain.keep_rules import KeepRules

__all__ = ["DrillPolicy", "Schedule"]


class BackupKind(StrEnum):
    """Who holds the source credentials: a local worker, the client (manual), or the service."""

    LOCAL = "local"
    MANUAL = "manual"
    CLOUD = "cloud"


class BackupState(StrEnum):
    """A backup is a draft until its kind's configuration is complete."""

    DRAFT = "draft"
    ACTIVE = "active"


class Unset(Enum):
    """Marks a field a PATCH did not mention."""

    UNSET = "unset"


UNSET = Unset.UNSET


@attrs.frozen
class S3Source:
    """An S3 bucket the service reads from (cloud backups)."""

    endpoint: str
    bucket: str
    prefix: str | None = None
    type: Literal["s3"] = "s3"


@attrs.frozen
class PostgresSource:
    """A PostgreSQL database the service dumps (cloud backups)."""

    host: str
    port: int
    database: str
    type: Literal["postgres"] = "postgres"


@attrs.frozen
class UnsupportedSource:
    """A source type this service does not offer; the kind rules always refuse it."""

    type: str


Source = S3Source | PostgresSource | UnsupportedSource

# The credential fields each source type needs (contract section 10).
CREDENTIAL_FIELDS: Mapping[str, frozenset[str]] = {
    "s3": frozenset({"access_key_id", "secret_access_key"}),
    "postgres": frozenset({"username", "password"}),
}
# The shapes each secret field of a PATCH may take: ``credentials`` those of every source
# type (which one a backup needs is a kind rule, 422), ``destination_credentials`` only the
# S3 one (a customer_s3 destination is a bucket).
CREDENTIAL_SHAPES: Mapping[str, tuple[frozenset[str], ...]] = {
    "credentials": tuple(CREDENTIAL_FIELDS.values()),
    "destination_credentials": (CREDENTIAL_FIELDS["s3"],),
}


def check_credentials_shape(given: Mapping[str, str], field: str) -> None:
    """Refuse with ``invalid_request`` credentials whose keys are none of ``field``'s
    shapes exactly: an unknown key, or a missing one (contract 10: a missing required
    field is 400). Messages name keys, never values."""
    shapes = CREDENTIAL_SHAPES[field]
    keys = frozenset(given)
    if keys in shapes:
        return
    unknown = keys - frozenset().union(*shapes)
    if unknown:
        raise UnknownFieldError(unknown, prefix=f"{field}.")
    fitting = [shape for shape in shapes if keys <= shape]
    if len(fitting) == 1:
        missing = ", ".join(f"{field}.{key}" for key in sorted(fitting[0] - keys))
        raise InvalidRequestError(f"missing field: {missing}")
    expected = " or ".join("{" + ", ".join(sorted(shape)) + "}" for shape in shapes)
    raise InvalidRequestError(f"invalid value for {field}: expected {expected}")


def _shaped_credentials(
    _instance: object, attribute: attrs.Attribute[Any], value: Mapping[str, str] | Unset
) -> None:
    if value is not UNSET:
        check_credentials_shape(value, attribute.name)


SOURCE_TYPES_BY_KIND: Mapping[BackupKind, frozenset[str]] = {
    BackupKind.CLOUD: frozenset({"s3", "postgres"}),
    BackupKind.LOCAL: frozenset(),
    BackupKind.MANUAL: frozenset(),
}


@attrs.frozen
class ServiceDestination:
    """Artifacts go to the service's own storage (the default)."""

    type: Literal["service"] = "service"


@attrs.frozen
class CustomerS3Destination:
    """Artifacts go only to the customer's own bucket."""

    endpoint: str
    bucket: str
    prefix: str | None = None
    type: Literal["customer_s3"] = "customer_s3"


Destination = ServiceDestination | CustomerS3Destination


@attrs.frozen
class RetentionPolicy:
    """How long artifacts are kept, and how long they cannot be removed by anyone; with
    ``keep``, the keep rules that select runs to keep past ``expire_after`` (contract 15)."""

    expire_after: Duration
    lock_for: Duration
    keep: KeepRules | None = None

    def __attrs_post_init__(self) -> None:
        if self.expire_after.seconds <= 0:
            raise InvalidRequestError("retention.expire_after must be longer than zero")

    def ensure_lock_within_expiry(self) -> None:
        """Refuse a lock longer than the expiry."""
        if self.lock_for > self.expire_after:
            raise LockExceedsExpiryError()


@attrs.frozen
class Freshness:
    """``freshness``: the backup's recovery point objective (contract 16): without a
    success newer than ``max_age`` the backup is ``late``."""

    max_age: Duration

    def __attrs_post_init__(self) -> None:
        if self.max_age.seconds <= 0:
            raise InvalidRequestError("freshness.max_age must be longer than zero")


@attrs.frozen
class BackupChanges:
    """A PATCH of a backup: every field not mentioned is ``UNSET``.

    Secret fields arrive in the clear here so that their shape can be checked (on
    construction: a shape no source type has is ``invalid_request``); the use case seals
    them before they reach the aggregate.
    """

    name: str | Unset = UNSET
    source: Source | Unset = UNSET
    credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET, validator=_shaped_credentials
    )
    schedule: Schedule | Unset | None = UNSET
    worker_id: UUID | Unset = UNSET
    retention: RetentionPolicy | Unset = UNSET
    destination: Destination | Unset = UNSET
    freshness: Freshness | Unset | None = UNSET
    destination_credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET, validator=_shaped_credentials
    )
    encryption: Encryption | Unset | None = UNSET
    drill: DrillPolicy | Unset | None = UNSET

    def mentioned(self) -> list[str]:
        """Names of the fields this PATCH sets."""
        return [
            field.name
            for field in attrs.fields(BackupChanges)
            if getattr(self, field.name) is not UNSET
        ]


_CHECKED = object()


@attrs.frozen
class CheckedChanges:
    """A PATCH that passed the kind rules of the backup it was checked against: what
    ``Backup.apply`` takes. Only ``Backup.check_kind_rules`` makes one."""

    backup: Backup
    changes: BackupChanges
    seal: object = attrs.field(repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.seal is not _CHECKED:
            raise TypeError("CheckedChanges come from Backup.check_kind_rules only")


def _check_credential_fields(given: Mapping[str, str], source_type: str, field: str) -> None:
    """Credentials of one source type's shape refused for a source of another (422)."""
    required = CREDENTIAL_FIELDS[source_type]
    if set(given) != required:
        raise ValidationFailedError(
            f"{field} for an {source_type} source take exactly: {', '.join(sorted(required))}"
        )


def check_encryption_kind(kind: BackupKind) -> None:
    """Only local and manual backups take ``encryption`` (snapshots of directories)."""
    if kind is BackupKind.CLOUD:
        raise ValidationFailedError("encryption is refused on a cloud backup")


def check_drill(kind: BackupKind, drill: DrillPolicy | None) -> None:
    """A ``drill`` the rules refuse (``validation_failed``): any on a local or manual
    backup (their copies are restored client-side), a target other than the service's own
    scratch target (a drill never writes to the customer's systems)."""
    if kind is not BackupKind.CLOUD:
        raise ValidationFailedError(
            f"drill is refused on a {kind} backup: the service drills only cloud backups"
        )
    if drill is not None and drill.target != SERVICE_TARGET:
        raise ValidationFailedError(
            f"drill.target type {drill.target.type} is not offered: a drill restores only "
            'into a scratch target the service owns ({"type": "service"})'
        )


@attrs.frozen
class Backup:
    """A named backup configuration of one kind in one workspace."""

    id: UUID
    workspace_id: UUID
    name: str
    kind: BackupKind
    state: BackupState
    paused: bool
    created_at: datetime
    updated_at: datetime
    source: Source | None = None
    sealed_credentials: bytes | None = None
    schedule: Schedule | None = None
    worker_id: UUID | None = None
    retention: RetentionPolicy | None = None
    destination: Destination = ServiceDestination()
    sealed_destination_credentials: bytes | None = None
    next_run_at: datetime | None = None
    encryption: Encryption | None = None
    freshness: Freshness | None = None
    drill: DrillPolicy | None = None
    # The next drill slot: set only while drills are scheduled (``drill_schedule``).
    next_drill_at: datetime | None = None

    @classmethod
    def draft(
        cls,
        backup_id: UUID,
        workspace_id: UUID,
        name: str,
        kind: BackupKind,
        now: datetime,
        encryption: Encryption | None = None,
        drill: DrillPolicy | None = None,
    ) -> Backup:
        """A new backup: a reserved id with a name and a kind, in state ``draft``; with
        ``encryption`` (checked by ``check_encryption_kind``) a snapshot backup; with
        ``drill`` (checked by ``check_drill``) drilled once it is active."""
        return cls(
            backup_id,
            workspace_id,
            name,
            kind,
            BackupState.DRAFT,
            False,
            now,
            now,
            encryption=encryption,
            drill=drill,
        )

    @property
    def format(self) -> BackupFormat:
        """``snapshot`` exactly when ``encryption`` is set, else ``archive``."""
        return BackupFormat.ARCHIVE if self.encryption is None else BackupFormat.SNAPSHOT

    @property
    def decided_run_by_run(self) -> bool:
        """Whether retention decides this backup's runs with ``retention_plan.plan`` (keep
        rules, newest, locks, references) rather than expiring artifact by artifact: its
        policy has keep rules, or it is a snapshot backup (one artifact of a snapshot is no
        backup to keep by itself; the snapshot is kept or goes whole)."""
        keep = self.retention is not None and self.retention.keep is not None
        return keep or self.format is BackupFormat.SNAPSHOT

    @property
    def has_credentials(self) -> bool:
        """Whether source credentials are stored (they are never returned)."""
        return self.sealed_credentials is not None

    def check_kind_rules(
        self,
        changes: BackupChanges,
        *,
        worker_exists: bool,
        endpoints: EndpointPolicy = DEFAULT_POLICY,
    ) -> CheckedChanges:
        """Refuse with ``validation_failed`` what this backup's kind does not accept, and
        an endpoint naming an address ``endpoints`` does not allow (contract 13); what
        passes is the value ``apply`` takes."""
        kind = self.kind
        if changes.worker_id is not UNSET:
            if kind is not BackupKind.LOCAL:
                raise ValidationFailedError(
                    f"worker_id is allowed only on a local backup, not {kind}"
                )
            if not worker_exists:
                raise ValidationFailedError("worker_id names no worker of this workspace")
        for field in ("source", "credentials"):
            if getattr(changes, field) is not UNSET and kind is not BackupKind.CLOUD:
                raise ValidationFailedError(f"{field} is refused on a {kind} backup")
        if changes.schedule is not UNSET and kind is BackupKind.MANUAL:
            raise ValidationFailedError("schedule is refused on a manual backup")
        source = self.source if changes.source is UNSET else changes.source
        if changes.source is not UNSET and changes.source.type not in SOURCE_TYPES_BY_KIND[kind]:
            raise ValidationFailedError(
                f"source type {changes.source.type} is not offered for {kind}"
            )
        if changes.credentials is not UNSET:
            if source is None:
                raise ValidationFailedError("credentials need a source")
            _check_credential_fields(changes.credentials, source.type, "credentials")
        if (
            changes.source is not UNSET
            and changes.credentials is UNSET
            and (self.source is not None and self.source.type != changes.source.type)
        ):
            raise ValidationFailedError("changing the source type needs new credentials")
        self._check_destination_rules(changes)
        if changes.encryption is not UNSET:
            check_encryption_kind(kind)
        if changes.drill is not UNSET:
            check_drill(kind, changes.drill)
        if isinstance(changes.source, S3Source):
            endpoints.check_endpoint(changes.source.endpoint, "source.endpoint")
        if isinstance(changes.source, PostgresSource):
            endpoints.check_host(changes.source.host, "source.host")
        if isinstance(changes.destination, CustomerS3Destination):
            endpoints.check_endpoint(changes.destination.endpoint, "destination.endpoint")
        return CheckedChanges(self, changes, _CHECKED)

    def _check_destination_rules(self, changes: BackupChanges) -> None:
        destination = self.destination if changes.destination is UNSET else changes.destination
        if changes.destination_credentials is not UNSET:
            # Their shape (the S3 one) was checked when the changes were built.
            if not isinstance(destination, CustomerS3Destination):
                raise ValidationFailedError(
                    "destination_credentials apply only to a customer_s3 destination"
                )
        elif isinstance(changes.destination, CustomerS3Destination) and (
            self.sealed_destination_credentials is None
        ):
            raise ValidationFailedError("a customer_s3 destination needs destination_credentials")

    def apply(
        self,
        checked: CheckedChanges,
        now: datetime,
        sealed_credentials: bytes | None = None,
        sealed_destination_credentials: bytes | None = None,
    ) -> Backup:
        """The backup after a PATCH that ``check_kind_rules`` passed for this very backup
        (changes checked against another state of it are refused: ``ValueError``).

        Retention is write-once: an identical policy is accepted, another is refused. The
        backup becomes ``active`` in the PATCH that completes its kind's configuration.
        """
        if checked.backup != self:
            raise ValueError("these changes were checked against another backup")
        changes = checked.changes
        updated = self
        if changes.retention is not UNSET:
            changes.retention.ensure_lock_within_expiry()
            if self.retention is not None and self.retention != changes.retention:
                raise RetentionImmutableError()
            updated = attrs.evolve(updated, retention=changes.retention)
        if changes.name is not UNSET:
            updated = attrs.evolve(updated, name=changes.name)
        if changes.source is not UNSET:
            updated = attrs.evolve(updated, source=changes.source)
        if changes.credentials is not UNSET:
            updated = attrs.evolve(updated, sealed_credentials=sealed_credentials)
        if changes.schedule is not UNSET:
            updated = attrs.evolve(updated, schedule=changes.schedule)
        if changes.worker_id is not UNSET:
            updated = attrs.evolve(updated, worker_id=changes.worker_id)
        if changes.freshness is not UNSET:
            updated = attrs.evolve(updated, freshness=changes.freshness)
        if changes.drill is not UNSET:
            updated = attrs.evolve(updated, drill=changes.drill)
        if changes.destination is not UNSET:
            updated = attrs.evolve(updated, destination=changes.destination)
            if isinstance(changes.destination, ServiceDestination):
                updated = attrs.evolve(updated, sealed_destination_credentials=None)
        if changes.destination_credentials is not UNSET:
            updated = attrs.evolve(
                updated, sealed_destination_credentials=sealed_destination_credentials
            )
        if changes.encryption is not UNSET:
            if changes.encryption is None and self.encryption is not None:
                raise InvalidStateError("a snapshot backup stays one: encryption cannot be removed")
            updated = attrs.evolve(updated, encryption=changes.encryption)
        if updated.state is BackupState.DRAFT and updated.is_complete():
            updated = attrs.evolve(updated, state=BackupState.ACTIVE)
        if updated == self:
            return self
        # Timing that did not change keeps its slot: a slot that is due stays due.
        updated = attrs.evolve(updated, updated_at=now)
        if updated.is_scheduled != self.is_scheduled or updated.schedule != self.schedule:
            updated = attrs.evolve(updated, next_run_at=updated.next_run_after(now))
        if updated.drill_schedule != self.drill_schedule:
            updated = attrs.evolve(updated, next_drill_at=updated.next_drill_after(now))
        return updated

    def is_complete(self) -> bool:
        """Whether the kind's configuration is complete (the condition for ``active``)."""
        return not self.missing_configuration()

    def missing_configuration(self) -> list[str]:
        """The fields (by their API names) the kind's configuration still lacks."""
        missing = ["retention"] if self.retention is None else []
        if self.kind is BackupKind.CLOUD:
            missing += ["source"] if self.source is None else []
            missing += ["credentials"] if self.sealed_credentials is None else []
        if self.kind is BackupKind.LOCAL and self.worker_id is None:
            missing.append("worker_id")
        return missing

    def paused_as(self, paused: bool, now: datetime) -> Backup:
        """Pause or resume (both idempotent); a paused backup keeps its state."""
        if paused == self.paused:
            return self
        return attrs.evolve(self, paused=paused).rescheduled(now)

    @property
    def is_scheduled(self) -> bool:
        """Whether the scheduler runs this backup: active, not paused, with a schedule."""
        return self.state is BackupState.ACTIVE and not self.paused and self.schedule is not None

    @property
    def drill_schedule(self) -> Schedule | None:
        """When the scheduler queues drills of this backup: its drill's schedule while it
        is active and not paused (a paused backup stops all scheduled work); else None."""
        if self.state is not BackupState.ACTIVE or self.paused or self.drill is None:
            return None
        return self.drill.schedule

    def next_run_after(self, now: datetime) -> datetime | None:
        """The first run slot after ``now``; None when the backup is not scheduled."""
        return self.schedule.next_after(now) if self.is_scheduled and self.schedule else None

    def next_drill_after(self, now: datetime) -> datetime | None:
        """The first drill slot after ``now``; None when drills are not scheduled."""
        schedule = self.drill_schedule
        return None if schedule is None else schedule.next_after(now)

    def rescheduled(self, now: datetime) -> Backup:
        """A copy touched at ``now`` with ``next_run_at`` and ``next_drill_at`` recomputed."""
        return attrs.evolve(
            self,
            updated_at=now,
            next_run_at=self.next_run_after(now),
            next_drill_at=self.next_drill_after(now),
        )

    def ensure_runnable(self) -> None:
        """Refuse a new run of a draft or paused backup."""
        if self.state is BackupState.DRAFT:
            missing = ", ".join(self.missing_configuration())
            raise InvalidStateError(
                f"backup is a draft until its configuration is complete; missing: {missing}"
            )
        if self.paused:
            raise InvalidStateError("backup is paused: resume it first")
