"""What a backup reads and where its artifacts go: sources, destinations, their
credentials, and the schedule and retention of a backup."""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from strongroom.adapters.wire.scalars import ENDPOINT, Bucket, Endpoint, NonEmpty, Port
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import backups
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.keep_rules import MAX_KEEP, KeepRules


@attrs.frozen
class S3Location:
    """The fields an S3 source and a `customer_s3` destination share (not a wire shape of
    its own)."""

    endpoint: Endpoint = attrs.field(metadata=meta(ENDPOINT))
    bucket: Bucket
    prefix: str | None = None
    """Null is the same as absent."""


@view_of(backups.S3Source)
@attrs.frozen
class S3Source(S3Location):
    """An S3 bucket the service reads (cloud backups)."""

    type: Literal["s3"] = "s3"


@view_of(backups.PostgresSource)
@attrs.frozen
class PostgresSource:
    """A PostgreSQL database the service dumps (cloud backups)."""

    host: NonEmpty
    port: Port
    database: NonEmpty
    type: Literal["postgres"] = "postgres"


@attrs.frozen
class S3Credentials:
    """Credentials of an S3 source or a `customer_s3` destination."""

    access_key_id: str
    secret_access_key: str = attrs.field(repr=False)


@attrs.frozen
class PostgresCredentials:
    """Credentials of a PostgreSQL source."""

    username: str
    password: str = attrs.field(repr=False)


@view_of(backups.Schedule)
@attrs.frozen
class ScheduleShape:
    """When a local or cloud backup runs."""

    __schema_name__: ClassVar[str] = "Schedule"
    cron: str = attrs.field(metadata=meta(schema={"format": "cron", "examples": ["0 3 * * *"]}))
    """A 5-field cron expression: numbers, `*`, ranges, steps within the field's range, lists and
    English month and weekday names (`jan`, `mon`); `L`, `?`, `W`, `#` and seconds are refused
    (400)."""
    timezone: str = attrs.field(
        metadata=meta(schema={"format": "time-zone", "examples": ["Europe/Paris"]})
    )
    """An IANA time zone name, e.g. `Europe/Paris`."""


_COUNT = meta(schema={"minimum": 0, "maximum": MAX_KEEP})


@view_of(KeepRules)
@attrs.frozen
class Keep:
    """Keep rules: each keeps the newest successful run of each of its N most recent
    buckets that hold one (`last`: the N newest runs), counted in the backup's schedule
    time zone (UTC without a schedule). Absent counts are 0."""

    last: int = attrs.field(default=0, metadata=_COUNT)
    hourly: int = attrs.field(default=0, metadata=_COUNT)
    daily: int = attrs.field(default=0, metadata=_COUNT)
    weekly: int = attrs.field(default=0, metadata=_COUNT)
    """ISO weeks (`2026-W48`)."""
    monthly: int = attrs.field(default=0, metadata=_COUNT)
    yearly: int = attrs.field(default=0, metadata=_COUNT)


@view_of(RetentionPolicy)
@attrs.frozen(init=False)
class Retention:
    """How long artifacts are kept, and how long nobody can remove them."""

    expire_after: Duration
    """Longer than zero."""
    lock_for: Duration = attrs.field(metadata=meta(schema={"examples": ["P7D"]}))
    """`PT0S` means no lock; longer than `expire_after` gives 422 `lock_exceeds_expiry`."""
    keep: KeepRules | None = attrs.field(
        default=None,
        metadata=meta(
            "Keep rules: a run expires once `expire_after` has passed and no rule keeps it. "
            "Absent when not set (the policy then reads as before).",
            optional=True,
        ),
    )

    def __init__(
        self,
        expire_after: Duration | str,
        lock_for: Duration | str = "PT0S",
        keep: KeepRules | None = None,
    ) -> None:
        """Both durations are required on the wire; built in Python (by a client),
        ``lock_for`` defaults to no lock and either may be given as text (``P30D``)."""
        self.__attrs_init__(_duration(expire_after), _duration(lock_for), keep)


def _duration(value: Duration | str) -> Duration:
    """``value`` as a ``Duration``; a text that is none is kept as given (typed as a
    duration only for the type checker), for the server to refuse as it would any."""
    if isinstance(value, Duration):
        return value
    try:
        return Duration.parse(value)
    except InvalidRequestError:
        return value  # type: ignore[return-value]


@view_of(backups.ServiceDestination)
@attrs.frozen
class ServiceDestination:
    """Artifacts go to the service's storage (the default)."""

    type: Literal["service"] = "service"


@view_of(backups.CustomerS3Destination)
@attrs.frozen
class CustomerS3Destination(S3Location):
    """Artifacts go only to the customer's own bucket and cannot be downloaded through the
    service."""

    type: Literal["customer_s3"] = "customer_s3"


# The unions a client names when it builds a request; the server's fields name the
# domain's unions, presented through these views.
SourceShape = S3Source | PostgresSource
DestinationShape = ServiceDestination | CustomerS3Destination
Credentials = S3Credentials | PostgresCredentials
