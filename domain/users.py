"""People known to the service, each mapped from an identity provider's subject."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs


@attrs.frozen
class User:
    """A human principal."""

    id: UUID
    email: str
    name: str
    idp_subject: str
    created_at: datetime
