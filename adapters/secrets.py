"""Encryption at rest of write-only secrets with Fernet (AES-128-CBC + HMAC-SHA256)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def derive_key(secret_key: str | bytes, purpose: str) -> bytes:
    """A 32-byte key for one ``purpose``, derived from the service's secret key."""
    material = secret_key.encode() if isinstance(secret_key, str) else secret_key
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=f"strongroom:{purpose}".encode()
    ).derive(material)


class FernetSecretBox:
    """Seals secrets with a key derived from ``STRONGROOM_SECRET_KEY``."""

    def __init__(self, secret_key: str | bytes) -> None:
        self._fernet = Fernet(base64.urlsafe_b64encode(derive_key(secret_key, "secrets-at-rest")))

    def seal(self, secret: Mapping[str, str]) -> bytes:
        """Encrypt and authenticate ``secret``."""
        return self._fernet.encrypt(json.dumps(dict(secret), sort_keys=True).encode())

    def open(self, sealed: bytes) -> dict[str, str]:
        """Decrypt what ``seal`` produced."""
        opened: dict[str, str] = json.loads(self._fernet.decrypt(sealed))
        return opened
