"""Outgoing mail (invitations)."""

from __future__ import annotations

from typing import Protocol


class Mailer(Protocol):
    """Delivers a message to one address."""

    async def send(self, to: str, subject: str, body: str) -> None:
        """Send (or queue) a message."""
        ...
