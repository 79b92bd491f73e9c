"""Local accounts and device-code grants of the built-in identity provider (RFC 8628)."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

# Failed approvals count against the rate limits for this long (contract 13), and no longer:
# the retention job forgets older ones.
FAILED_LOGIN_WINDOW = timedelta(minutes=15)


@attrs.frozen
class Account:
    """A person registered with the built-in identity provider."""

    id: UUID
    email: str
    name: str
    password_hash: str
    created_at: datetime


class GrantState(StrEnum):
    """Where a device-code grant stands."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    ISSUED = "issued"


@attrs.frozen
class DeviceGrant:
    """One device authorization: a device code for the client, a user code for the person."""

    id: UUID
    device_code_hash: str
    user_code: str
    client_id: str
    created_at: datetime
    expires_at: datetime
    interval: int
    state: GrantState = GrantState.PENDING
    account_id: UUID | None = None
    failed_approvals: int = 0
    last_polled_at: datetime | None = None
    access_token_hash: str | None = None
    access_expires_at: datetime | None = None

    def is_expired(self, now: datetime) -> bool:
        """Whether the device code can no longer be approved or exchanged."""
        return now >= self.expires_at
