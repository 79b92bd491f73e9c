"""The backup aggregate: kinds and their rules, activation, pausing, write-once retention."""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any, Literal
from uuid import UUID

import attrs
from croniter import CroniterBadDateError, croniter

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
from strongroom.domain.slots import next_slot


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


# A fixed instant from which a cron expression must fire at least once (it always does
# within a few years unless it names a date that never exists, such as 30 February).
_CRON_PROBE = datetime(2000, 1, 1, tzinfo=UTC)


@attrs.frozen
class _CronField:
    """One of the five fields of a cron expression: its range and its English names."""

    label: str
    low: int
    high: int
    names: Mapping[str, int] = attrs.field(factory=dict)

    def value(self, text: str) -> int | None:
        """A number within the range, or a name (any case); ``None`` for anything else."""
        if _CRON_NUMBER.fullmatch(text):
            number = int(text)
            return number if self.low <= number <= self.high else None
        return self.names.get(text.lower())

    def accepts(self, text: str) -> bool:
        """A list of ``*``, values and ranges ``a-b`` (``a <= b``), where ``*`` and ranges
        may take a step ``/n`` of 1 up to the field's largest value."""
        for item in text.split(","):
            base, slash, step = item.partition("/")
            if slash and not (_CRON_NUMBER.fullmatch(step) and 1 <= int(step) <= self.high):
                return False
            if base == "*":
                continue
            low, dash, high = base.partition("-")
            first = self.value(low)
            if first is None:
                return False
            if not dash:
                if slash:  # a step needs a range: ``5/15`` is not standard cron
                    return False
                continue
            last = self.value(high)
            if last is None or last < first:
                return False
        return True


_CRON_NUMBER = re.compile(r"[0-9]{1,2}", re.ASCII)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_FIELDS = (
    _CronField("minute", 0, 59),
    _CronField("hour", 0, 23),
    _CronField("day-of-month", 1, 31),
    _CronField("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, 1)}),
    # 0 and 7 are both Sunday.
    _CronField("day-of-week", 0, 7, {name: number for number, name in enumerate(_WEEKDAYS)}),
)


def _check_cron_grammar(expression: str) -> None:
    """The grammar contract 13 allows, checked before croniter (which takes more: ``L``,
    ``?``, ``W``, ``#``, ``H``, seconds, any step). Messages never repeat the expression."""
    fields = re.split(r"[ \t]+", expression.strip(" \t"))
    if len(fields) != len(_CRON_FIELDS):
        raise InvalidRequestError("schedule.cron must be a 5-field cron expression")
    for text, field in zip(fields, _CRON_FIELDS, strict=True):
        if not field.accepts(text):
            raise InvalidRequestError(
                f"schedule.cron: the {field.label} field takes numbers {field.low}-{field.high}"
                f"{', names' if field.names else ''}, *, ranges, steps within the range and "
                "lists, nothing else"
            )


def _valid_cron(expression: str) -> str:
    _check_cron_grammar(expression)
    if not croniter.is_valid(expression):
        raise InvalidRequestError("schedule.cron must be a 5-field cron expression")
    try:
        croniter(expression, _CRON_PROBE).get_next(datetime)
    except CroniterBadDateError as error:
        raise InvalidRequestError("schedule.cron never fires") from error
    return expression


# Names the time zone database holds that are not zones of the world: the host's own
# zone, the database's template and placeholder, and the alternative trees.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def canonical_timezones() -> frozenset[str]:
    """The IANA names a schedule may use (contract 13)."""
    return frozenset(
        name
        for name in zoneinfo.available_timezones()
        if name not in _NOT_ZONES and not name.startswith(("posix/", "right/"))
    )


def _valid_timezone(name: str) -> str:
    if name not in canonical_timezones():
        raise InvalidRequestError("schedule.timezone must be an IANA time zone name")
    return name


@attrs.frozen
class Schedule:
    """When a local or cloud backup runs: a 5-field cron expression in an IANA time zone."""

    cron: str = attrs.field(converter=_valid_cron)
    timezone: str = attrs.field(converter=_valid_timezone)

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment``, in UTC, with the DST rules of
        contract 11 (see ``schedules``)."""
        return next_slot(self.cron, self.timezone, moment)


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

    @classmethod
    def draft(
        cls,
        backup_id: UUID,
        workspace_id: UUID,
        name: str,
        kind: BackupKind,
        now: datetime,
        encryption: Encryption | None = None,
    ) -> Backup:
        """A new backup: a reserved id with a name and a kind, in state ``draft``; with
        ``encryption`` (checked by ``check_encryption_kind``) a snapshot backup."""
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
        )

    @property
    def format(self) -> BackupFormat:
        """``snapshot`` exactly when ``encryption`` is set, else ``archive``."""
        return BackupFormat.ARCHIVE if self.encryption is None else BackupFormat.SNAPSHOT

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
        if updated.is_scheduled == self.is_scheduled and updated.schedule == self.schedule:
            # The timing did not change: a slot that is due stays due for the scheduler.
            return attrs.evolve(updated, updated_at=now)
        return updated.rescheduled(now)

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

    def rescheduled(self, now: datetime) -> Backup:
        """A copy touched at ``now`` with ``next_run_at`` recomputed."""
        next_run = self.schedule.next_after(now) if self.is_scheduled and self.schedule else None
        return attrs.evolve(self, updated_at=now, next_run_at=next_run)

    def ensure_runnable(self) -> None:
        """Refuse a new run of a draft or paused backup."""
        if self.state is BackupState.DRAFT:
            missing = ", ".join(self.missing_configuration())
            raise InvalidStateError(
                f"backup is a draft until its configuration is complete; missing: {missing}"
            )
        if self.paused:
            raise InvalidStateError("backup is paused: resume it first")
