"""The format of every bearer token: a recognisable prefix, 256 random bits, a checksum.

The checksum (CRC-32 of prefix and body, six base-62 digits) lets a secret scanner tell a
real token from noise without a database look-up. Only the SHA-256 of a token is stored.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zlib
from enum import StrEnum

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BODY_LENGTH = 43  # 62**43 > 2**256
_CHECKSUM_LENGTH = 6
# A prefix's shape, then body and checksum in the alphabet: one match, not a loop in Python.
_WELL_FORMED = re.compile(rf"(bk[a-z]_)[0-9A-Za-z]{{{_BODY_LENGTH + _CHECKSUM_LENGTH}}}")


class TokenKind(StrEnum):
    """Token prefixes by credential kind."""

    SESSION = "bks_"
    API_KEY = "bkk_"
    WORKER = "bkw_"
    IDP_ACCESS = "bki_"
    DEVICE_CODE = "bkd_"
    AUTHORIZATION_CODE = "bka_"


_KINDS = {kind.value: kind for kind in TokenKind}


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, remainder = divmod(number, 62)
        digits.append(_ALPHABET[remainder])
    return "".join(reversed(digits))


def _checksum(prefix_and_body: str) -> str:
    return _base62(zlib.crc32(prefix_and_body.encode()), _CHECKSUM_LENGTH)


def format_token(kind: TokenKind, random_bytes: bytes) -> str:
    """Build a token of ``kind`` from at least 32 random bytes."""
    if len(random_bytes) < 32:
        raise ValueError("a token needs at least 256 bits of randomness")
    body = _base62(int.from_bytes(random_bytes, "big"), _BODY_LENGTH)
    return kind.value + body + _checksum(kind.value + body)


@functools.lru_cache(maxsize=4096)  # asked at every request; a pure function of the text
def token_kind(token: str) -> TokenKind | None:
    """The kind of a well-formed token with a valid checksum, else ``None``."""
    matched = _WELL_FORMED.fullmatch(token)
    kind = None if matched is None else _KINDS.get(matched[1])
    if kind is None:
        return None
    body_end = len(kind.value) + _BODY_LENGTH
    return kind if _checksum(token[:body_end]) == token[body_end:] else None


def hash_token(token: str) -> str:
    """The stored form of a token. Tokens carry 256 random bits, so a fast hash suffices."""
    return hashlib.sha256(token.encode()).hexdigest()
