"""Parsing of ``PATCH /v1/backups/{bid}`` bodies into the domain's ``BackupChanges``.

Only the shape is checked here: unknown fields, missing fields, JSON types, URLs, UUIDs,
cron, time zones, durations and the keys of credentials (all 400 ``invalid_request``,
naming the field). What a
backup's kind accepts is decided later by the domain (422 ``validation_failed``), once
the backup is known to exist. Messages never repeat a value, so no secret is echoed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from uuid import UUID

from strongroom.adapters.http.bodies import require_url
from strongroom.domain.backups import (
    UNSET,
    BackupChanges,
    CustomerS3Destination,
    Destination,
    PostgresSource,
    RetentionPolicy,
    S3Source,
    Schedule,
    ServiceDestination,
    Source,
    Unset,
    UnsupportedSource,
)
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError, UnknownFieldError, shown_field

T = TypeVar("T")

MAX_PORT = 65_535
PATCH_FIELDS = frozenset(
    {
        "name",
        "source",
        "credentials",
        "schedule",
        "worker_id",
        "retention",
        "destination",
        "destination_credentials",
    }
)


def _wrong_type(field: str, expected: str) -> InvalidRequestError:
    return InvalidRequestError(f"invalid value for {field}: expected {expected}")


def _string(value: Any, field: str) -> str:
    if type(value) is not str:
        raise _wrong_type(field, "a string")
    return value


def _non_empty_string(value: Any, field: str) -> str:
    text = _string(value, field)
    if not text:
        raise InvalidRequestError(f"invalid value for {field}: must not be empty")
    return text


def _optional_string(value: Any, field: str) -> str | None:
    """An optional string field; ``null`` means absent (the API returns it that way)."""
    return None if value is None else _string(value, field)


def _port(value: Any, field: str) -> int:
    if type(value) is not int:
        raise _wrong_type(field, "an integer")
    if not 1 <= value <= MAX_PORT:
        raise InvalidRequestError(f"invalid value for {field}: must be between 1 and {MAX_PORT}")
    return value


def _uuid(value: Any, field: str) -> UUID:
    text = _string(value, field)
    try:
        return UUID(text)
    except ValueError as error:
        raise _wrong_type(field, "a UUID") from error


def _object(
    value: Any, field: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> Mapping[str, Any]:
    """A JSON object holding every ``required`` key and nothing outside ``optional``."""
    if not isinstance(value, dict):
        raise _wrong_type(field, "an object")
    unknown = set(value) - required - optional
    if unknown:
        raise UnknownFieldError(unknown, prefix=f"{field}.")
    missing = sorted(required - set(value))
    if missing:
        raise InvalidRequestError(
            f"missing field: {', '.join(f'{field}.{key}' for key in missing)}"
        )
    return value


def _type_of(value: Any, field: str) -> str:
    """The ``type`` member of a tagged object (source or destination)."""
    if not isinstance(value, dict):
        raise _wrong_type(field, "an object")
    if "type" not in value:
        raise InvalidRequestError(f"missing field: {field}.type")
    return _non_empty_string(value["type"], f"{field}.type")


def _s3_location(value: Any, field: str) -> tuple[str, str, str | None]:
    """``endpoint``, ``bucket`` and ``prefix`` of an S3 source or destination."""
    body = _object(value, field, frozenset({"type", "endpoint", "bucket"}), frozenset({"prefix"}))
    return (
        require_url(body["endpoint"], f"{field}.endpoint"),
        _non_empty_string(body["bucket"], f"{field}.bucket"),
        _optional_string(body.get("prefix"), f"{field}.prefix"),
    )


def parse_source(value: Any) -> Source:
    """``{type: "s3", endpoint, bucket, prefix?}``, ``{type: "postgres", host, port, database}``.

    Any other type is kept as ``UnsupportedSource`` so that the kind rules refuse it (422):
    a source type not offered for the kind is well-formed, only unacceptable.
    """
    source_type = _type_of(value, "source")
    if source_type == "s3":
        endpoint, bucket, prefix = _s3_location(value, "source")
        return S3Source(endpoint=endpoint, bucket=bucket, prefix=prefix)
    if source_type == "postgres":
        body = _object(value, "source", frozenset({"type", "host", "port", "database"}))
        return PostgresSource(
            host=_non_empty_string(body["host"], "source.host"),
            port=_port(body["port"], "source.port"),
            database=_non_empty_string(body["database"], "source.database"),
        )
    return UnsupportedSource(source_type)


def parse_destination(value: Any) -> Destination:
    """``{type: "service"}`` or ``{type: "customer_s3", endpoint, bucket, prefix?}``."""
    destination_type = _type_of(value, "destination")
    if destination_type == "service":
        _object(value, "destination", frozenset({"type"}))
        return ServiceDestination()
    if destination_type == "customer_s3":
        endpoint, bucket, prefix = _s3_location(value, "destination")
        return CustomerS3Destination(endpoint=endpoint, bucket=bucket, prefix=prefix)
    raise InvalidRequestError("invalid value for destination.type: expected service or customer_s3")


def parse_secrets(value: Any, field: str) -> Mapping[str, str]:
    """An object of strings. Its keys must be one of the field's shapes, checked when the
    ``BackupChanges`` are built (400); which shape a source needs is a kind rule (422)."""
    if not isinstance(value, dict):
        raise _wrong_type(field, "an object of strings")
    return {key: _string(item, f"{field}.{shown_field(key)}") for key, item in value.items()}


def parse_schedule(value: Any) -> Schedule | None:
    """``null`` (no schedule) or ``{cron, timezone}``; a bad cron or zone is 400."""
    if value is None:
        return None
    body = _object(value, "schedule", frozenset({"cron", "timezone"}))
    return Schedule(
        cron=_string(body["cron"], "schedule.cron"),
        timezone=_string(body["timezone"], "schedule.timezone"),
    )


def parse_retention(value: Any) -> RetentionPolicy:
    """``{expire_after, lock_for}`` as ISO 8601 durations (lock within expiry is checked later)."""
    body = _object(value, "retention", frozenset({"expire_after", "lock_for"}))
    return RetentionPolicy(
        expire_after=_duration(body["expire_after"], "retention.expire_after"),
        lock_for=_duration(body["lock_for"], "retention.lock_for"),
    )


def _duration(value: Any, field: str) -> Duration:
    return Duration.parse(_string(value, field), field)


def _field(body: Mapping[str, Any], field: str, parse: Callable[[Any], T]) -> T | Unset:
    """``UNSET`` when ``field`` is absent; ``null`` is refused (only ``schedule`` takes it)."""
    if field not in body:
        return UNSET
    value = body[field]
    if value is None:
        raise InvalidRequestError(f"invalid value for {field}: must not be null")
    return parse(value)


def parse_backup_changes(body: Mapping[str, Any]) -> BackupChanges:
    """The changes a PATCH body asks for; fields it does not mention stay ``UNSET``.

    ``kind`` is immutable and, like any other field outside the list, is refused as unknown.
    """
    unknown = set(body) - PATCH_FIELDS
    if unknown:
        note = " (the kind of a backup cannot be changed)" if "kind" in unknown else ""
        raise UnknownFieldError(unknown, note=note)
    return BackupChanges(
        name=_field(body, "name", lambda value: _string(value, "name")),
        source=_field(body, "source", parse_source),
        credentials=_field(body, "credentials", lambda value: parse_secrets(value, "credentials")),
        schedule=parse_schedule(body["schedule"]) if "schedule" in body else UNSET,
        worker_id=_field(body, "worker_id", lambda value: _uuid(value, "worker_id")),
        retention=_field(body, "retention", parse_retention),
        destination=_field(body, "destination", parse_destination),
        destination_credentials=_field(
            body,
            "destination_credentials",
            lambda value: parse_secrets(value, "destination_credentials"),
        ),
    )
