"""Expiry rules of credentials: API key expiry and invitation use (contract sections 3, 10)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.errors import InvalidStateError, ValidationFailedError
from strongroom.domain.invitations import INVITATION_LIFETIME, Invitation, InvitationState
from strongroom.domain.machines import check_expiry

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OFFSETS = st.integers(min_value=-(10**9), max_value=10**9).map(lambda s: timedelta(microseconds=s))


class TestApiKeyExpiry:
    """An API key's ``expires_at`` is optional and, when given, after now."""

    def test_no_expiry_is_accepted(self) -> None:
        """A key may live until revoked."""
        assert check_expiry(None, NOW) is None

    @given(OFFSETS)
    def test_only_a_future_instant_is_accepted(self, offset: timedelta) -> None:
        """Now or earlier is ``validation_failed``; any later instant is kept as it is."""
        expires_at = NOW + offset
        if offset > timedelta(0):
            assert check_expiry(expires_at, NOW) == expires_at
        else:
            with pytest.raises(ValidationFailedError, match="expires_at must be in the future"):
                check_expiry(expires_at, NOW)


class TestInvitationUse:
    """An invitation is usable once, for ``INVITATION_LIFETIME``."""

    def invitation(self) -> Invitation:
        """A new invitation issued at ``NOW``."""
        return Invitation.issue(UUID(int=1), UUID(int=2), "ada@example.com", "member", NOW)

    def test_issue_sets_the_lifetime(self) -> None:
        """It expires seven days after it was issued, pending until then."""
        invitation = self.invitation()
        assert invitation.expires_at == NOW + INVITATION_LIFETIME == NOW + timedelta(days=7)
        assert invitation.state(NOW) is InvitationState.PENDING

    @given(OFFSETS)
    def test_it_can_be_used_only_before_it_expires(self, offset: timedelta) -> None:
        """Used before its expiry it is accepted at that instant; at or after, 409."""
        invitation = self.invitation()
        at = invitation.expires_at + offset
        if offset < timedelta(0):
            assert invitation.accepted(at).state(at) is InvitationState.ACCEPTED
        else:
            with pytest.raises(InvalidStateError, match="this invitation is expired"):
                invitation.accepted(at)

    def test_it_can_be_used_once(self) -> None:
        """A used invitation refuses a second use."""
        used = self.invitation().accepted(NOW)
        with pytest.raises(InvalidStateError, match="this invitation is accepted"):
            used.accepted(NOW + timedelta(seconds=1))
