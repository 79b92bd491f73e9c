"""The service's proof key (Ed25519) and the signature of proof documents.

A document is signed over its canonical JSON (keys sorted, no spaces, UTF-8) without its
``signature`` member; the signature member holds the key's id and the base64 signature,
so a verifier needs only the public key (``/.well-known/strongroom-proof-key``).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

KEY_FILE = "proof_key.pem"
ALGORITHM = "ed25519"


class ProofSignatureError(Exception):
    """A proof whose signature is missing, malformed, by another key, or wrong."""


def canonical(document: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the document without ``signature``, keys sorted."""
    unsigned = {key: value for key, value in document.items() if key != "signature"}
    return orjson.dumps(unsigned, option=orjson.OPT_SORT_KEYS)


def key_id(public_key: Ed25519PublicKey) -> str:
    """A short name of a public key: the first 16 hex digits of its raw bytes' SHA-256."""
    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_pem(public_key: Ed25519PublicKey) -> str:
    """The public key as PEM text, as served at the well-known URL."""
    return public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


def load_public_key(pem: str | bytes) -> Ed25519PublicKey:
    """A public key from PEM text; ``ProofSignatureError`` for anything else."""
    try:
        key = load_pem_public_key(pem.encode() if isinstance(pem, str) else pem)
    except ValueError as error:
        raise ProofSignatureError("the public key is not a PEM Ed25519 key") from error
    if not isinstance(key, Ed25519PublicKey):
        raise ProofSignatureError("the public key is not an Ed25519 key")
    return key


class ProofSigner:
    """Signs proof documents with the service's private key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.public_key = private_key.public_key()

    @classmethod
    def generated(cls) -> ProofSigner:
        """A signer with a new key of its own (an in-memory service, tests)."""
        return cls(Ed25519PrivateKey.generate())

    def public_pem(self) -> str:
        """The public key, PEM."""
        return public_pem(self.public_key)

    @classmethod
    def from_pem(cls, pem: str | bytes) -> ProofSigner:
        key = load_pem_private_key(pem.encode() if isinstance(pem, str) else pem, None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("STRONGROOM_PROOF_KEY must be a PEM Ed25519 private key")
        return cls(key)

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> ProofSigner:
        """The key kept at ``<data dir>/proof_key.pem``, made (mode 0600) on first use."""
        path = data_dir / KEY_FILE
        if not path.exists():
            data_dir.mkdir(parents=True, exist_ok=True)
            pem = Ed25519PrivateKey.generate().private_bytes(
                Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
            )
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(pem)
        return cls.from_pem(path.read_bytes())

    def sign(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """The document with its ``signature`` member."""
        signature = self._key.sign(canonical(document))
        return {
            **{key: value for key, value in document.items() if key != "signature"},
            "signature": {
                "algorithm": ALGORITHM,
                "key_id": key_id(self.public_key),
                "value": base64.b64encode(signature).decode(),
            },
        }


def verify(document: Mapping[str, Any], public_key: Ed25519PublicKey) -> None:
    """Raise ``ProofSignatureError`` unless ``public_key`` signed exactly this document."""
    signature = document.get("signature")
    if not isinstance(signature, Mapping) or signature.get("algorithm") != ALGORITHM:
        raise ProofSignatureError("the proof carries no Ed25519 signature")
    if signature.get("key_id") != key_id(public_key):
        raise ProofSignatureError("the proof was signed by another key")
    try:
        value = base64.b64decode(str(signature.get("value")), validate=True)
        public_key.verify(value, canonical(document))
    except (ValueError, InvalidSignature) as error:
        raise ProofSignatureError("the proof's signature does not match its content") from error
