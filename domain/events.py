"""What an aggregate records when it changes: the audit trail's action, the object acted
on, and its fields before and after.

An aggregate's transition returns its new state; ``recorded`` on the old state names the
change into the new one (``found.recorded("run.claim", claimed)``). The use case hands the
event to its unit of work, which writes it, attributed to whoever acted, in the
transaction that commits the change (``UnitOfWork.collect``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol
from uuid import UUID

import attrs

from strongroom.domain.audit import Change, JsonValue, diff


def _frozen(value: Mapping[str, Change] | None) -> Mapping[str, Change] | None:
    return None if value is None else MappingProxyType(dict(value))


@attrs.frozen
class Recorded:
    """One change, as the audit trail shows it (never a secret). The target is an object
    of the action's resource (``backup`` of ``backup.update``) unless ``target_type`` says
    otherwise (``run.skip`` names the backup whose slot was skipped)."""

    action: str
    target_id: UUID | str | None
    changes: Mapping[str, Change] | None = attrs.field(default=None, converter=_frozen)
    target_type: str | None = None

    @property
    def target(self) -> str:
        """The target's type."""
        return self.target_type or self.action.partition(".")[0]


class Audited(Protocol):
    """An aggregate the audit trail shows: its id and its fields as recorded."""

    @property
    def id(self) -> UUID: ...

    def audit_view(self) -> dict[str, JsonValue]:
        """Its fields as the audit trail shows them."""
        ...


def changed(action: str, before: Audited, after: Audited) -> Recorded:
    """``before`` became ``after``: the fields whose recorded values differ."""
    return Recorded(action, before.id, diff(before.audit_view(), after.audit_view()))


def created(action: str, made: Audited, **extra: JsonValue) -> Recorded:
    """``made`` is new: every recorded field (and ``extra``) from nothing."""
    return Recorded(action, made.id, diff({}, made.audit_view() | extra))


def removed(action: str, gone: Audited) -> Recorded:
    """``gone`` is deleted: every recorded field to nothing."""
    return Recorded(action, gone.id, diff(gone.audit_view(), {}))
