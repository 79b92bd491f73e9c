"""Keep secrets out of what a restore reports."""

from __future__ import annotations

from collections.abc import Mapping

REDACTED = "[redacted]"
# Values this short would blank out ordinary words; they are no secret worth the damage.
MIN_SECRET = 4


def scrubbed(text: str, credentials: Mapping[str, str]) -> str:
    """``text`` with every credential value (longest first) replaced by ``[redacted]``."""
    for value in sorted(credentials.values(), key=len, reverse=True):
        if len(value) >= MIN_SECRET:
            text = text.replace(value, REDACTED)
    return text
