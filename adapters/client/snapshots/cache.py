"""The client's local cache of its last snapshot: enough to skip files that did not change.

It maps a path to (size, mtime in ns, inode, ctime in ns, chunk ids). It stays on the
client's machine (it names files), so it is never uploaded. Version 2 is one zstd frame
of columns (docs/format.md, "The local cache"): loading it is a few bulk reads, not a
Python object per path; a file's row is only looked at when the walk reaches it. A
version 1 cache (JSON, no ctime) is still read.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from array import array
from itertools import accumulate
from typing import NamedTuple

import zstandard

from strongroom.client.snapshots.crypto import CHUNK_ID_SIZE

CACHE_VERSION = 2
CACHE_MAGIC = b"SRLC"
_HEADER = struct.Struct("<4sBcQQ")  # magic, version, byte order, files, paths' length
_ORDER = b"<" if sys.byteorder == "little" else b">"
_MAX_CACHE = 1 << 32


class CachedFile(NamedTuple):
    """The state a file had when its chunks were computed (``ctime_ns`` None: unknown,
    from a version 1 cache)."""

    size: int
    mtime_ns: int
    inode: int
    chunks: tuple[bytes, ...]
    ctime_ns: int | None = None

    def matches(self, size: int, mtime_ns: int, inode: int, ctime_ns: int) -> bool:
        return (
            self.size == size
            and self.mtime_ns == mtime_ns
            and self.inode == inode
            and (self.ctime_ns is None or self.ctime_ns == ctime_ns)
        )


class _Columns(NamedTuple):
    """A loaded version 2 cache: row numbers by path, and the rows' columns."""

    rows: dict[bytes, int]
    numbers: array[int]  # per row: size, mtime, ctime (-1: unknown)
    inodes: array[int]
    starts: list[int]  # per row, its first chunk's number; one more at the end
    chunks: bytes


class LocalCache:
    """Per path, the state a file had when its chunks were last computed."""

    def __init__(self, files: dict[bytes, CachedFile] | None = None) -> None:
        self.files: dict[bytes, CachedFile] = files if files is not None else {}
        self._loaded: _Columns | None = None

    def __len__(self) -> int:
        if self._loaded is None:
            return len(self.files)
        return len(self.files.keys() | self._loaded.rows.keys())

    def get(self, path: bytes) -> CachedFile | None:
        found = self.files.get(path)
        if found is not None or self._loaded is None:
            return found
        loaded = self._loaded
        row = loaded.rows.get(path)
        if row is None:
            return None
        numbers, at = loaded.numbers, 3 * row
        ctime = numbers[at + 2]
        first, end = loaded.starts[row] * CHUNK_ID_SIZE, loaded.starts[row + 1] * CHUNK_ID_SIZE
        data = loaded.chunks
        if end - first == CHUNK_ID_SIZE:
            ids: tuple[bytes, ...] = (data[first:end],)
        else:
            ids = tuple(data[i : i + CHUNK_ID_SIZE] for i in range(first, end, CHUNK_ID_SIZE))
        return CachedFile(
            numbers[at], numbers[at + 1], loaded.inodes[row], ids, None if ctime == -1 else ctime
        )

    def put(self, path: bytes, cached: CachedFile) -> None:
        self.files[path] = cached

    def _all(self) -> dict[bytes, CachedFile]:
        if self._loaded is None:
            return self.files
        every = {p: f for p in self._loaded.rows if (f := self.get(p)) is not None}
        every.update(self.files)
        return every

    def to_bytes(self) -> bytes:
        files = self._all()
        paths = b"\0".join(files)
        numbers = array("q")
        inodes = array("Q")
        counts = array("I")
        chunks = bytearray()
        for f in files.values():
            ctime = -1 if f.ctime_ns is None else f.ctime_ns
            numbers.extend((f.size, f.mtime_ns, ctime))
            inodes.append(f.inode)
            counts.append(len(f.chunks))
            chunks += b"".join(f.chunks)
        body = b"".join(
            (
                _HEADER.pack(CACHE_MAGIC, CACHE_VERSION, _ORDER, len(files), len(paths)),
                paths,
                numbers.tobytes(),
                inodes.tobytes(),
                counts.tobytes(),
                chunks,
            )
        )
        return zstandard.ZstdCompressor(level=1, write_content_size=True).compress(body)

    @classmethod
    def from_bytes(cls, data: bytes | None) -> LocalCache:
        """The cache in ``data``; an empty one when it is missing or unreadable."""
        if not data:
            return cls()
        try:
            body = zstandard.ZstdDecompressor().decompress(data, max_output_size=_MAX_CACHE)
        except zstandard.ZstdError:
            return cls()
        if body[:4] != CACHE_MAGIC:
            return cls._from_json(body)
        try:
            return cls._from_columns(body)
        except (struct.error, ValueError, IndexError, OverflowError):
            return cls()

    @classmethod
    def _from_columns(cls, body: bytes) -> LocalCache:
        _, version, order, count, paths_length = _HEADER.unpack_from(body)
        if version != CACHE_VERSION or order != _ORDER:
            return cls()
        at = _HEADER.size
        paths = body[at : at + paths_length].split(b"\0") if count else []
        at += paths_length
        numbers = array("q")
        numbers.frombytes(body[at : at + 24 * count])
        at += 24 * count
        inodes = array("Q")
        inodes.frombytes(body[at : at + 8 * count])
        at += 8 * count
        counts = array("I")
        counts.frombytes(body[at : at + 4 * count])
        at += 4 * count
        starts = [0, *accumulate(counts)]
        chunks = body[at:]
        sizes = (len(paths), len(numbers) // 3, len(inodes), len(counts))
        if sizes != (count,) * 4 or len(chunks) != starts[-1] * CHUNK_ID_SIZE:
            return cls()
        cache = cls()
        cache._loaded = _Columns(
            dict(zip(paths, range(count), strict=True)), numbers, inodes, starts, chunks
        )
        return cache

    @classmethod
    def _from_json(cls, text: bytes) -> LocalCache:
        """A version 1 cache: zstd-compressed JSON, without ctimes."""
        try:
            document = json.loads(text)
            if document.get("version") != 1:
                return cls()
            return cls(
                {
                    os.fsencode(p): CachedFile(
                        size, mtime, ino, tuple(bytes.fromhex(c) for c in ids)
                    )
                    for p, size, mtime, ino, ids in document["files"]
                }
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()
