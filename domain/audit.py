"""Audit events: every mutation, and every mutation refused for authorization."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from uuid import UUID

import attrs

from strongroom.domain.principals import Actor

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


class Outcome(StrEnum):
    """Whether the audited attempt took effect."""

    SUCCESS = "success"
    DENIED = "denied"


@attrs.frozen
class Change:
    """One field's value before and after a mutation (never a secret)."""

    before: JsonValue
    after: JsonValue


def _frozen_changes(value: Mapping[str, Change] | None) -> Mapping[str, Change] | None:
    return None if value is None else MappingProxyType(dict(value))


@attrs.frozen
class AuditEvent:
    """One audited action in a workspace."""

    id: UUID
    workspace_id: UUID
    occurred_at: datetime
    actor: Actor
    action: str
    target_type: str
    target_id: str | None
    request_id: str | None
    outcome: Outcome
    changes: Mapping[str, Change] | None = attrs.field(default=None, converter=_frozen_changes)

    @property
    def created_at(self) -> datetime:
        """The keyset-pagination time of the event."""
        return self.occurred_at


def diff(before: Mapping[str, JsonValue], after: Mapping[str, JsonValue]) -> dict[str, Change]:
    """The fields whose values differ between two snapshots."""
    return {
        field: Change(before.get(field), after.get(field))
        for field in sorted(set(before) | set(after))
        if before.get(field) != after.get(field)
    }


def creation(after: Mapping[str, JsonValue]) -> dict[str, Change]:
    """``diff({}, after)``, the changes of a creation: the fields ``after`` gives a value,
    in their sorted order; without the union of key sets and the look-ups of a diff."""
    return {
        field: Change(None, after[field]) for field in sorted(after) if after[field] is not None
    }
