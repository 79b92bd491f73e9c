"""The client's local cache of its last snapshot: enough to skip files that did not change.

It maps a path to (size, mtime in ns, inode, chunk ids). It stays on the client's machine
(it names files), so it is plain JSON compressed with zstd, never uploaded.
"""

from __future__ import annotations

import json
import os

import attrs
import zstandard

CACHE_VERSION = 1


@attrs.frozen
class CachedFile:
    size: int
    mtime_ns: int
    inode: int
    chunks: tuple[bytes, ...]


@attrs.define
class LocalCache:
    """Per path, the state a file had when its chunks were last computed."""

    files: dict[bytes, CachedFile] = attrs.field(factory=dict)

    def to_bytes(self) -> bytes:
        document = {
            "version": CACHE_VERSION,
            "files": [
                [os.fsdecode(p), f.size, f.mtime_ns, f.inode, [c.hex() for c in f.chunks]]
                for p, f in self.files.items()
            ],
        }
        return zstandard.ZstdCompressor(level=3).compress(json.dumps(document).encode())

    @classmethod
    def from_bytes(cls, data: bytes | None) -> LocalCache:
        """The cache in ``data``; an empty one when it is missing or unreadable."""
        if not data:
            return cls()
        try:
            document = json.loads(zstandard.ZstdDecompressor().decompress(data))
            if document.get("version") != CACHE_VERSION:
                return cls()
            return cls(
                {
                    os.fsencode(p): CachedFile(
                        size, mtime, ino, tuple(bytes.fromhex(c) for c in ids)
                    )
                    for p, size, mtime, ino, ids in document["files"]
                }
            )
        except (zstandard.ZstdError, ValueError, KeyError, TypeError):
            return cls()
