"""Hashing an object as it streams, in constant memory."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

CHUNK = 1024 * 1024


def hash_stream(read: Callable[[int], bytes]) -> tuple[str, int]:
    """The sha256 (hex) and length of what ``read`` yields, ``CHUNK`` bytes at a time,
    until it returns nothing."""
    digest = hashlib.sha256()
    size = 0
    while chunk := read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size
