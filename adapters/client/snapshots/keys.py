"""Keys: the person's age X25519 identity, its recipients, and the repository key.

The repository key (a chunk-id key and an index key, 32 bytes each) is made once per backup
by the client. A write-only worker holds it; the service holds it only sealed to the
recipients. Everything else a snapshot keeps secret (pack data keys, manifests) is sealed to
the recipients, so only an identity reads it back.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import pyrage
from pyrage import x25519

from strongroom.client.snapshots.errors import FormatError, SnapshotKeyError

REPOSITORY_KEY_MAGIC = b"SRRK"
REPOSITORY_KEY_VERSION = 1
KEY_SIZE = 32
MAX_RECIPIENTS = 10
_TEXT_PREFIX = "strongroom-repository-key-1:"


@attrs.frozen(repr=False)
class Identity:
    """An age X25519 identity (``AGE-SECRET-KEY-1...``), as written by ``age-keygen``."""

    secret: str

    def __attrs_post_init__(self) -> None:
        self._age()

    def _age(self) -> Any:
        try:
            return x25519.Identity.from_str(self.secret)
        except pyrage.IdentityError as error:
            raise SnapshotKeyError("not an age X25519 identity") from error

    @property
    def recipient(self) -> str:
        """The public key (``age1...``) that seals to this identity."""
        return str(self._age().to_public())

    def __repr__(self) -> str:
        return f"Identity(recipient={self.recipient!r})"


def load_identity(text: str) -> Identity:
    """The identity in an age key file (comments and blank lines are skipped)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.upper().startswith("AGE-SECRET-KEY-1"):
            return Identity(stripped)
    raise SnapshotKeyError("no AGE-SECRET-KEY-1 line in the identity file")


def generate_identity() -> tuple[Identity, str]:
    """A new identity and its key file text, in age-keygen's layout."""
    identity = Identity(str(x25519.Identity.generate()))
    created = datetime.now(UTC).replace(microsecond=0).isoformat()
    text = f"# created: {created}\n# public key: {identity.recipient}\n{identity.secret}\n"
    return identity, text


def check_recipients(recipients: Sequence[str]) -> tuple[str, ...]:
    """The recipients as given, after checking there are 1 to 10 well-formed ``age1...`` keys."""
    if not 1 <= len(recipients) <= MAX_RECIPIENTS:
        raise SnapshotKeyError(f"between 1 and {MAX_RECIPIENTS} recipients are needed")
    _age_recipients(recipients)
    return tuple(recipients)


def _age_recipients(recipients: Sequence[str]) -> list[Any]:
    try:
        return [x25519.Recipient.from_str(r) for r in recipients]
    except pyrage.RecipientError as error:
        raise SnapshotKeyError(f"malformed recipient: {error}") from error


def seal(plaintext: bytes, recipients: Sequence[str]) -> bytes:
    """``plaintext`` encrypted to every recipient (an age v1 file, binary)."""
    sealed: bytes = pyrage.encrypt(plaintext, _age_recipients(recipients))
    return sealed


def unseal(sealed: bytes, identity: Identity) -> bytes:
    """The plaintext of an age file sealed to ``identity``'s recipient."""
    try:
        opened: bytes = pyrage.decrypt(bytes(sealed), [identity._age()])
    except pyrage.DecryptError as error:
        raise SnapshotKeyError(f"cannot open a sealed object: {error}") from error
    return opened


@attrs.frozen(repr=False)
class RepositoryKey:
    """The per-backup secret a write-only worker holds: chunk ids and the index."""

    chunk_id_key: bytes
    index_key: bytes

    @classmethod
    def generate(cls) -> RepositoryKey:
        return cls(secrets.token_bytes(KEY_SIZE), secrets.token_bytes(KEY_SIZE))

    def to_bytes(self) -> bytes:
        version = bytes([REPOSITORY_KEY_VERSION])
        return REPOSITORY_KEY_MAGIC + version + self.chunk_id_key + self.index_key

    @classmethod
    def from_bytes(cls, data: bytes) -> RepositoryKey:
        if len(data) != 5 + 2 * KEY_SIZE or data[:4] != REPOSITORY_KEY_MAGIC:
            raise FormatError("not a repository key")
        if data[4] != REPOSITORY_KEY_VERSION:
            raise FormatError(f"repository key version {data[4]} is not supported")
        return cls(data[5 : 5 + KEY_SIZE], data[5 + KEY_SIZE :])

    def to_text(self) -> str:
        """The key as one line, for the agent's configuration."""
        return _TEXT_PREFIX + base64.urlsafe_b64encode(self.to_bytes()).decode()

    @classmethod
    def from_text(cls, text: str) -> RepositoryKey:
        text = text.strip()
        if not text.startswith(_TEXT_PREFIX):
            raise SnapshotKeyError("not a strongroom repository key")
        try:
            return cls.from_bytes(base64.urlsafe_b64decode(text[len(_TEXT_PREFIX) :]))
        except (ValueError, FormatError) as error:
            raise SnapshotKeyError("not a strongroom repository key") from error

    def seal(self, recipients: Sequence[str]) -> bytes:
        """The key sealed to the recipients: the only form the service ever stores."""
        return seal(self.to_bytes(), recipients)

    @classmethod
    def unseal(cls, sealed: bytes, identity: Identity) -> RepositoryKey:
        return cls.from_bytes(unseal(sealed, identity))

    def __repr__(self) -> str:
        return "RepositoryKey(<secret>)"
