"""Machine credentials: API keys (fixed permissions in one workspace) and workers.

Only the hash of a credential's token is ever stored. ``last_used_at`` / ``last_seen_at``
are recorded at most once per ``USAGE_GRANULARITY``, so authenticating a request does not
write on every request.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue
from strongroom.domain.errors import ValidationFailedError
from strongroom.domain.events import Recorded
from strongroom.domain.permissions import Permission

USAGE_GRANULARITY = timedelta(minutes=1)


def usage_is_stale(last: datetime | None, now: datetime) -> bool:
    """Whether a credential's last-use time should be written again."""
    return last is None or now - last >= USAGE_GRANULARITY


def in_catalog_order(permissions: frozenset[Permission]) -> list[Permission]:
    """``permissions`` in the catalog's order (how they are stored and shown)."""
    return [permission for permission in Permission if permission in permissions]


def check_expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    """A credential's requested expiry: none, or an instant after ``now``
    (``validation_failed`` otherwise)."""
    if expires_at is not None and expires_at <= now:
        raise ValidationFailedError("expires_at must be in the future")
    return expires_at


@attrs.frozen
class ApiKey:
    """A machine credential scoped to one workspace with a fixed set of permissions."""

    id: UUID
    workspace_id: UUID
    name: str
    permissions: frozenset[Permission]
    token_hash: str
    created_at: datetime
    expires_at: datetime | None = None
    last_used_at: datetime | None = None

    def is_live(self, now: datetime) -> bool:
        """Whether the key can still authenticate a request."""
        return self.expires_at is None or now < self.expires_at


@attrs.frozen
class Worker:
    """A machine executor of local backups; it holds exactly ``WORKER_PERMISSIONS``."""

    id: UUID
    workspace_id: UUID
    name: str
    token_hash: str
    created_at: datetime
    last_seen_at: datetime | None = None

    def audit_view(self) -> dict[str, JsonValue]:
        """What the audit trail shows of a worker (never its credential)."""
        return {"name": self.name}

    def rotated(self, token_hash: str) -> Worker:
        """A copy whose credential is a new one (the old one stops working)."""
        return attrs.evolve(self, token_hash=token_hash)

    def recorded_rotation(self) -> Recorded:
        """A new credential: the audit records only that it changed (it is a secret)."""
        return Recorded("worker.rotate", self.id)
