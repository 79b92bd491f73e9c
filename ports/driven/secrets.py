"""Encryption at rest of write-only secrets (backup source and destination credentials)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class SecretBox(Protocol):
    """Seals secrets before they are stored; only a worker path ever opens them."""

    def seal(self, secret: Mapping[str, str]) -> bytes:
        """Encrypt and authenticate ``secret``."""
        ...

    def open(self, sealed: bytes) -> dict[str, str]:
        """Decrypt what ``seal`` produced."""
        ...
