"""Production implementations of the clock and the id generator."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime


class SystemClock:
    """The machine's clock, in UTC."""

    def now(self) -> datetime:
        """The current instant."""
        return datetime.now(UTC)


class SecureIds:
    """Random UUIDs and bytes from the operating system's CSPRNG."""

    def new_id(self) -> uuid.UUID:
        """A random (version 4) UUID."""
        return uuid.uuid4()

    def random_bytes(self, count: int) -> bytes:
        """``count`` secure random bytes."""
        return secrets.token_bytes(count)
