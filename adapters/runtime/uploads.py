"""Streaming an artifact the service writes itself into storage, in constant memory.

Bytes are collected up to one part (``DEFAULT_PART_SIZE``, 16 MiB: the part size of
the multipart plan that ``confirm`` checks against). A stream that ends within the first
part is stored in one request that carries its sha256 (the store refuses other bytes);
a longer one becomes a multipart upload, one part at a time, begun when the first part
is full. The sha256 and the size are computed on the way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

from strongroom.domain.artifacts import DEFAULT_PART_SIZE, MAX_PARTS
from strongroom.domain.errors import InvalidRequestError
from strongroom.ports.driven.storage import ObjectStorage


class StreamedUpload:
    """One object written chunk by chunk; ``started(upload_id)`` is awaited when a
    multipart upload begins (so that it can be recorded, and aborted if the run ends)."""

    def __init__(
        self,
        storage: ObjectStorage,
        key: str,
        started: Callable[[str], Awaitable[None]],
        part_size: int = DEFAULT_PART_SIZE,
    ) -> None:
        self._storage = storage
        self._key = key
        self._started = started
        self._part_size = part_size
        self._buffer = bytearray()
        self._digest = hashlib.sha256()
        self._size = 0
        self._parts = 0
        self.upload_id: str | None = None

    @property
    def size(self) -> int:
        """Bytes received so far."""
        return self._size

    async def write(self, chunk: bytes) -> None:
        """Take the next chunk; full parts go to storage at once."""
        self._digest.update(chunk)
        self._size += len(chunk)
        self._buffer += chunk
        while len(self._buffer) > self._part_size:
            await self._send(bytes(self._buffer[: self._part_size]))
            del self._buffer[: self._part_size]

    async def _send(self, part: bytes) -> None:
        if self.upload_id is None:
            self.upload_id = await self._storage.start_multipart(self._key)
            await self._started(self.upload_id)
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise InvalidRequestError(
                f"the artifact is larger than {MAX_PARTS} parts of {self._part_size} bytes"
            )
        await self._storage.upload_part(self._key, self.upload_id, self._parts, part)

    async def finish(self) -> tuple[int, str]:
        """Store what is left; the object's size and sha256. The parts of a multipart
        upload are joined by ``confirm``, as a client's are."""
        sha256 = self._digest.hexdigest()
        if self.upload_id is None:
            await self._storage.put(self._key, bytes(self._buffer), sha256)
        elif self._buffer:
            await self._send(bytes(self._buffer))
        self._buffer.clear()
        return self._size, sha256
