"""The archive of an S3 source: one POSIX tar in PAX format, compressed as one zstd stream.

The format is fixed (restores read it):

- for each object, in listing order, a regular file named ``objects/`` + the key relative
  to the source prefix, holding the object's exact bytes, its mtime the object's
  last-modified time, and a PAX record ``STRONGROOM.key`` with the exact relative key
  (a restore uses this record, never the member name);
- then a last member ``manifest.json``: ``{"format": "strongroom-s3/1", "bucket", "prefix",
  "objects": [{"key", "size", "etag", "sha256"}, ...], "count", "bytes"}`` (``sha256``,
  hex, of the bytes archived: what a restore drill checks the restored objects against).

Everything streams: members are written as their bytes arrive, compressed on the way, and
handed on in chunks of about ``CHUNK`` bytes; only the manifest's list is kept in memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from typing import IO, Protocol, cast

import attrs
import zstandard

FORMAT = "strongroom-s3/1"
KEY_RECORD = "STRONGROOM.key"
MEMBER_PREFIX = "objects/"
MANIFEST = "manifest.json"
CHUNK = 1024 * 1024
COPY_BUFFER = 1024 * 1024
LEVEL = 3


@attrs.frozen
class ArchivedObject:
    """One object as the manifest lists it."""

    key: str
    size: int
    etag: str
    sha256: str


class _Hashed:
    """A body that hashes what is read from it."""

    def __init__(self, body: Readable) -> None:
        self._body = body
        self.digest = hashlib.sha256()

    def read(self, size: int = -1, /) -> bytes:
        data = self._body.read(size)
        self.digest.update(data)
        return data


class Readable(Protocol):
    """What an object's body offers: reads of at most ``size`` bytes."""

    def read(self, size: int = -1, /) -> bytes:
        """At most ``size`` bytes; empty at the end."""
        ...


class ZstdSink(io.RawIOBase):
    """A write-only file that compresses what it gets into one zstd frame and hands the
    compressed bytes to ``emit`` in chunks of at least ``CHUNK`` bytes (the rest on
    ``finish``)."""

    def __init__(self, emit: Callable[[bytes], None], level: int = LEVEL) -> None:
        super().__init__()
        self._emit = emit
        self._compressor = zstandard.ZstdCompressor(level=level).compressobj()
        self._pending = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._pending += self._compressor.compress(bytes(data))
        if len(self._pending) >= CHUNK:
            self._flush()
        return len(data)

    def _flush(self) -> None:
        if self._pending:
            chunk = bytes(self._pending)
            self._pending.clear()
            self._emit(chunk)

    def finish(self) -> None:
        """End the zstd frame and hand on what is left."""
        self._pending += self._compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
        self._flush()


class ArchiveWriter:
    """Writes the members of an S3 source's archive into a ``ZstdSink``."""

    def __init__(self, sink: ZstdSink, bucket: str, prefix: str) -> None:
        self._sink = sink
        self._bucket = bucket
        self._prefix = prefix
        self._objects: list[ArchivedObject] = []
        self._tar = tarfile.open(  # noqa: SIM115 (closed by ``finish``)
            fileobj=cast(IO[bytes], sink), mode="w|", format=tarfile.PAX_FORMAT
        )
        self._tar.copybufsize = COPY_BUFFER  # type: ignore[attr-defined]  # (not in typeshed)

    def add(self, relative_key: str, size: int, mtime: float, etag: str, body: Readable) -> None:
        """One object: exactly ``size`` bytes read from ``body`` (``OSError`` when it ends
        sooner)."""
        member = tarfile.TarInfo(MEMBER_PREFIX + relative_key)
        member.size = size
        member.mtime = int(mtime)
        member.mode = 0o644
        member.type = tarfile.REGTYPE
        member.pax_headers = {KEY_RECORD: relative_key}
        hashed = _Hashed(body)
        self._tar.addfile(member, cast(IO[bytes], hashed))
        self._objects.append(ArchivedObject(relative_key, size, etag, hashed.digest.hexdigest()))

    def finish(self) -> list[ArchivedObject]:
        """Write the manifest and the end of the archive; the objects archived."""
        manifest = json.dumps(
            {
                "format": FORMAT,
                "bucket": self._bucket,
                "prefix": self._prefix,
                "objects": [attrs.asdict(item) for item in self._objects],
                "count": len(self._objects),
                "bytes": sum(item.size for item in self._objects),
            },
            ensure_ascii=False,
        ).encode()
        member = tarfile.TarInfo(MANIFEST)
        member.size = len(manifest)
        member.mode = 0o644
        self._tar.addfile(member, io.BytesIO(manifest))
        self._tar.close()
        self._sink.finish()
        return list(self._objects)
