"""Standard Webhooks signatures (``webhook-id``, ``webhook-timestamp``,
``webhook-signature: v1,<base64 HMAC-SHA-256>``), through the reference package."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from standardwebhooks.webhooks import Webhook

from strongroom.domain.webhooks import SECRET_PREFIX

SECRET_BYTES = 24


def new_secret() -> str:
    """A fresh signing secret as shown once to the person: ``whsec_`` + base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signed_headers(secret: str, message_id: str, at: datetime, body: str) -> dict[str, str]:
    """The three headers a receiver checks, for ``body`` sent as message ``message_id``."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, at, body),
    }
