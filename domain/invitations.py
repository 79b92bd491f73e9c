"""Invitations: a person is asked by email to join a workspace with a role."""

from __future__ import annotations

import unicodedata
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.errors import InvalidRequestError, InvalidStateError

INVITATION_LIFETIME = timedelta(days=7)
MAX_EMAIL_LENGTH = 254


class InvitationState(StrEnum):
    """Where an invitation stands; ``expired`` is derived from the clock."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    EXPIRED = "expired"


def clean_email(raw: str) -> str:
    """An email address, trimmed: one ``@`` with text on each side, no spaces or controls."""
    email = raw.strip()
    local, at, domain = email.rpartition("@")
    if (
        not at
        or not local
        or not domain
        or len(email) > MAX_EMAIL_LENGTH
        or any(c.isspace() or unicodedata.category(c) in ("Cc", "Cs") for c in email)
    ):
        raise InvalidRequestError("email must be an email address")
    return email


@attrs.frozen
class Invitation:
    """An invitation to join a workspace with a role; usable once, for seven days."""

    id: UUID
    workspace_id: UUID
    email: str
    role: str
    created_at: datetime
    expires_at: datetime
    accepted_at: datetime | None = None

    @classmethod
    def issue(
        cls, invitation_id: UUID, workspace_id: UUID, email: str, role: str, now: datetime
    ) -> Invitation:
        """A new invitation, usable for ``INVITATION_LIFETIME`` from ``now``."""
        return cls(invitation_id, workspace_id, email, role, now, now + INVITATION_LIFETIME)

    def state(self, now: datetime) -> InvitationState:
        """The state at ``now``."""
        if self.accepted_at is not None:
            return InvitationState.ACCEPTED
        if now >= self.expires_at:
            return InvitationState.EXPIRED
        return InvitationState.PENDING

    def accepted(self, at: datetime) -> Invitation:
        """A copy used at ``at``; only a pending invitation can be used (409
        ``invalid_state`` for an accepted or expired one)."""
        state = self.state(at)
        if state is not InvitationState.PENDING:
            raise InvalidStateError(f"this invitation is {state.value}")
        return attrs.evolve(self, accepted_at=at)
