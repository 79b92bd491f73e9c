"""Time and identity generation: injected so that tests and embedders control them."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID


class Clock(Protocol):
    """The current time, timezone-aware in UTC."""

    def now(self) -> datetime:
        """The current instant."""
        ...


class IdGenerator(Protocol):
    """New identifiers and secret randomness."""

    def new_id(self) -> UUID:
        """A fresh UUID."""
        ...

    def random_bytes(self, count: int) -> bytes:
        """Cryptographically secure random bytes."""
        ...
