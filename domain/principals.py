"""Who acts: people, API keys, workers and the system; and the authenticated caller."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.errors import (
    ForbiddenError,
    MissingPermissionError,
    NoWorkspaceSelectedError,
)
from strongroom.domain.permissions import Permission
from strongroom.domain.users import User


class PrincipalType(StrEnum):
    """The kinds of actor the audit trail records."""

    USER = "user"
    API_KEY = "api_key"
    WORKER = "worker"
    SYSTEM = "system"


@attrs.frozen
class Actor:
    """An actor as the audit trail records it; the system actor has no id."""

    type: PrincipalType
    id: UUID | None


SYSTEM_ACTOR = Actor(PrincipalType.SYSTEM, None)


@attrs.frozen
class Session:
    """A person's signed-in session, optionally scoped to one workspace."""

    id: UUID
    token_hash: str
    user_id: UUID
    workspace_id: UUID | None
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None

    def is_live(self, now: datetime) -> bool:
        """Whether the session can still authenticate a request."""
        return self.revoked_at is None and now < self.expires_at


@attrs.frozen
class Caller:
    """An authenticated request's principal, its workspace scope and what it may do.

    ``permissions`` are resolved when the credential is authenticated (a person's role is
    read afresh on every request), so a role change takes effect on the next request.
    """

    actor: Actor
    credential_id: UUID
    workspace_id: UUID | None
    permissions: frozenset[Permission]
    user: User | None = None
    request_id: str | None = None

    @property
    def is_human(self) -> bool:
        """Whether the caller is a person (only people own memberships and workspaces)."""
        return self.actor.type is PrincipalType.USER

    @property
    def worker_id(self) -> UUID | None:
        """The worker acting, when the caller is a worker (it sees only its own backups)."""
        return self.actor.id if self.actor.type is PrincipalType.WORKER else None

    def person(self, refusal: str) -> User:
        """The person calling; a machine credential is refused with 403 ``refusal``
        (only people own memberships, create workspaces and hold sessions)."""
        if not self.is_human or self.user is None:
            raise ForbiddenError(refusal)
        return self.user

    def scoped_workspace(self) -> UUID:
        """The workspace the credential is scoped to; refuses with ``select a workspace first``."""
        if self.workspace_id is None:
            raise NoWorkspaceSelectedError()
        return self.workspace_id

    def ensure_permission(self, *accepted: Permission) -> None:
        """Refuse unless the caller holds at least one of ``accepted``; names the first."""
        if not any(permission in self.permissions for permission in accepted):
            raise MissingPermissionError(accepted[0].value)
