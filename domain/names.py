"""Names of workspaces, backups, workers, API keys and roles: trimmed, 1..100, no controls."""

from __future__ import annotations

import unicodedata

from strongroom.domain.errors import InvalidRequestError

MAX_NAME_LENGTH = 100


def clean_name(raw: str, field: str = "name") -> str:
    """Return ``raw`` trimmed, or refuse it when empty, too long or holding control characters."""
    name = raw.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise InvalidRequestError(
            f"{field} must be 1 to {MAX_NAME_LENGTH} characters after trimming"
        )
    if name.isprintable():
        # No character of category C* or Z* but the space, so no Cc and no Cs: the
        # scans below, a lookup per character, are for the rare names that fail this.
        return name
    if any(unicodedata.category(char) == "Cc" for char in name):
        raise InvalidRequestError(f"{field} must not contain control characters")
    if any(unicodedata.category(char) == "Cs" for char in name):
        # A lone surrogate is not text: it cannot be encoded as UTF-8 to store or return.
        raise InvalidRequestError(f"{field} must be valid Unicode text")
    return name


def name_key(name: str) -> str:
    """The case-insensitive form under which names are unique."""
    return name.casefold()


def email_key(email: str) -> str:
    """The case-insensitive form under which emails match: accounts, invitations and
    sign-in limits all compare emails in this form."""
    return email.strip().casefold()
