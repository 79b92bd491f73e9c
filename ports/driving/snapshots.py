"""The core's own text form of a use case's result, kept for Idempotency-Key replays.

A snapshot is the result's attrs fields as JSON; restoring it gives back an equal domain
object, which the driving adapter presents as it presented the first answer.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar
from uuid import UUID

from cattrs.preconf.json import make_converter

from strongroom.domain.backups import (
    CustomerS3Destination,
    Destination,
    PostgresSource,
    S3Source,
    ServiceDestination,
    Source,
    UnsupportedSource,
)

T = TypeVar("T")

_SOURCES: dict[str, type[S3Source | PostgresSource]] = {"s3": S3Source, "postgres": PostgresSource}
_DESTINATIONS: dict[str, type[Destination]] = {
    "service": ServiceDestination,
    "customer_s3": CustomerS3Destination,
}

_converter = make_converter()
_converter.register_unstructure_hook(UUID, str)
_converter.register_structure_hook(UUID, lambda value, _: UUID(value))


def _structure_source(value: dict[str, Any] | None, _: object) -> Source | None:
    if value is None:
        return None
    cls: type[S3Source | PostgresSource | UnsupportedSource]
    cls = _SOURCES.get(value["type"], UnsupportedSource)
    source: Source = _converter.structure(value, cls)
    return source


def _structure_destination(value: dict[str, Any], _: object) -> Destination:
    return _converter.structure(value, _DESTINATIONS[value["type"]])


# Tagged by their own ``type`` field: the union's classes are told apart by it.
_converter.register_structure_hook(Source | None, _structure_source)
_converter.register_structure_hook(Destination, _structure_destination)


def snapshot(result: Any) -> dict[str, Any]:
    """``result``'s fields as JSON values (nested objects as objects)."""
    data: dict[str, Any] = _converter.unstructure(result)
    return data


def restore(data: dict[str, Any], cls: type[T]) -> T:
    """The object of class ``cls`` that ``snapshot`` described."""
    return _converter.structure(data, cls)


def dumps(data: dict[str, Any]) -> str:
    """A snapshot's text."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def loads(text: str) -> dict[str, Any]:
    """A snapshot from its text."""
    data: dict[str, Any] = json.loads(text)
    return data
