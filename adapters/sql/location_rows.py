"""A backup's source and destination (and a restore's target) as stored: the API's own JSON
shape, written and read with the wire's converter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strongroom.adapters.wire import CONVERTER, present
from strongroom.adapters.wire.scalars import READING_STORED
from strongroom.domain.audit import JsonValue
from strongroom.domain.backups import Destination, Schedule, Source
from strongroom.domain.drill_policy import DrillPolicy, DrillTarget


def source_to_json(source: Source) -> dict[str, JsonValue]:
    """A backup's source as a JSON object, tagged by ``type`` (the API's shape)."""
    presented: dict[str, JsonValue] = present(source)
    return presented


def source_from_json(value: Mapping[str, Any]) -> Source:
    """A backup's source from its JSON object."""
    found: Source = _structured(value, Source)
    return found


def destination_to_json(destination: Destination) -> dict[str, JsonValue]:
    """A backup's destination as a JSON object, tagged by ``type`` (the API's shape)."""
    presented: dict[str, JsonValue] = present(destination)
    return presented


def destination_from_json(value: Mapping[str, Any]) -> Destination:
    """A backup's destination from its JSON object."""
    found: Destination = _structured(value, Destination)
    return found


# Sources and destinations are frozen values of a few scalars, and most backups of a
# deployment share a handful of them ({"type": "service"} above all): each is structured
# once, not once per row (a page of 50 backups spent a third of its rows' time in cattrs).
_STRUCTURED: dict[tuple[Any, ...], Any] = {}
_STRUCTURED_MAX = 4096


def _structured(value: Mapping[str, Any], union: Any) -> Any:
    reading = READING_STORED.set(True)
    try:
        return _structured_once(value, union)
    finally:
        READING_STORED.reset(reading)


def _structured_once(value: Mapping[str, Any], union: Any) -> Any:
    try:
        # The type of each value is in the key: 1, 1.0 and True are equal, not the same.
        key = (union, *sorted((name, type(item), item) for name, item in value.items()))
        found = _STRUCTURED.get(key)
    except TypeError:  # a nested or unhashable value: not a shape of ours, refused below
        return CONVERTER.structure(value, union)
    if found is None:
        found = CONVERTER.structure(value, union)
        if len(_STRUCTURED) >= _STRUCTURED_MAX:
            _STRUCTURED.clear()
        _STRUCTURED[key] = found
    return found


def drill_to_json(drill: DrillPolicy) -> dict[str, Any]:
    """A backup's drill as its column stores it (the API's shape)."""
    schedule = {"cron": drill.schedule.cron, "timezone": drill.schedule.timezone}
    return {"schedule": schedule, "target": {"type": drill.target.type}}


def drill_from_json(value: Mapping[str, Any]) -> DrillPolicy:
    """A backup's drill from its column."""
    schedule = value["schedule"]
    return DrillPolicy(
        Schedule(schedule["cron"], schedule["timezone"]), DrillTarget(value["target"]["type"])
    )
