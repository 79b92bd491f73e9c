"""The audit list: who did what to which target, and what changed."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import audit, principals
from strongroom.domain.audit import Outcome
from strongroom.domain.principals import PrincipalType


@view_of(principals.Actor)
@attrs.frozen
class Actor:
    """Who acted."""

    type: PrincipalType
    id: UUID | None
    """Null for the `system` actor."""


@attrs.frozen
class Target:
    """What was acted on."""

    type: str = attrs.field(metadata=meta(get="target_type"))
    """The resource, e.g. `backup`."""
    id: str | None = attrs.field(metadata=meta(get="target_id"))


@view_of(audit.Change)
@attrs.frozen
class Change:
    """A field's value before and after."""

    before: Any = attrs.field(metadata=meta(rename="from"))
    after: Any = attrs.field(metadata=meta(rename="to"))


@view_of(audit.AuditEvent)
@attrs.frozen
class AuditEvent:
    """A mutation, or a mutation refused for a missing permission."""

    id: UUID
    occurred_at: datetime
    actor: Actor
    action: str
    """`<resource>.<verb>`, e.g. `workspace.create`, `backup.update`."""
    target: Target = attrs.field(metadata=meta(get=lambda event: event))
    request_id: str | None
    outcome: Outcome
    changes: dict[str, Change] | None
    """`{field: {from, to}}`, never a secret."""
