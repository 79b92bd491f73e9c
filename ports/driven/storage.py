"""The object storage port: presigned transfers, inspection, locks and deletion.

Bytes never pass through the API: the use cases only ask storage for presigned URLs and
then check what arrived. Adapters raise ``UpstreamUnavailableError`` when storage fails,
and ``ObjectLockedError`` when asked to remove, or shorten the lock of, an object inside
its lock window: the lock is the storage's own (S3 Object Lock in COMPLIANCE mode; the
local-disk adapter enforces it itself), so it holds even against the API's own key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

import attrs

from strongroom.ports.driven.provisioning import StorageNamespaces


class ObjectLockedError(Exception):
    """The object is inside its lock window: storage refuses to remove it or shorten it."""


@attrs.frozen
class PresignedRequest:
    """A request the client makes itself. ``url`` is absolute, or for the local-disk
    storage a path that the HTTP adapter resolves against the service's public URL."""

    method: str
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class StoredObject:
    """What storage says about an object: its size and, where it can tell, its sha256."""

    size: int
    sha256: str | None = None


@attrs.frozen
class StoredPart:
    """One part of an unfinished multipart upload."""

    number: int
    size: int
    etag: str


@attrs.frozen
class PendingUpload:
    """An unfinished multipart upload, for the retention job."""

    key: str
    upload_id: str
    initiated_at: datetime


class ObjectReader(Protocol):
    """An object's bytes as a blocking stream (what ``open_object`` gives); close it."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes (all the rest for -1); ``b""`` at the end."""
        ...

    def close(self) -> None:
        """Release the stream (and its connection)."""
        ...


class ObjectStorage(StorageNamespaces, Protocol):
    """One bucket (or directory) holding every workspace's namespace."""

    def presign_put(
        self, key: str, size: int, sha256: str, expires_at: datetime
    ) -> PresignedRequest:
        """A single-request upload of exactly ``size`` bytes to ``key``."""
        ...

    async def start_multipart(self, key: str) -> str:
        """Begin a multipart upload to ``key``; its upload id."""
        ...

    def presign_part(
        self, key: str, upload_id: str, number: int, size: int, expires_at: datetime
    ) -> PresignedRequest:
        """An upload of part ``number`` (``size`` bytes) of a multipart upload."""
        ...

    async def put(self, key: str, data: bytes, sha256: str) -> None:
        """Store ``data`` at ``key`` in one request; the store refuses bytes whose digest is
        not ``sha256`` (the service's own writes, such as a cloud run's small artifact)."""
        ...

    async def upload_part(self, key: str, upload_id: str, number: int, data: bytes) -> StoredPart:
        """Store part ``number`` of a multipart upload (the service's own streamed writes);
        the part as ``list_parts`` reports it."""
        ...

    async def list_parts(self, key: str, upload_id: str) -> list[StoredPart] | None:
        """The parts stored so far, by number; None when the upload no longer exists."""
        ...

    async def complete_multipart(self, key: str, upload_id: str, parts: list[StoredPart]) -> None:
        """Join the parts into the object."""
        ...

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop an unfinished upload and its parts (nothing happens if it is gone)."""
        ...

    async def pending_uploads(self, older_than: datetime) -> list[PendingUpload]:
        """Multipart uploads begun before ``older_than`` and never finished."""
        ...

    async def stat(self, key: str) -> StoredObject | None:
        """The object at ``key``, or None."""
        ...

    async def read_digest(self, key: str) -> StoredObject | None:
        """Re-read the whole object (the version a download serves) and hash it, in
        constant memory: its size and actual sha256, or None when it is gone."""
        ...

    def open_object(self, key: str) -> ObjectReader | None:
        """Blocking (call it from a worker thread): the object's bytes (the version a
        download serves) as a stream read in constant memory; None when it is gone."""
        ...

    async def lock(self, key: str, until: datetime) -> None:
        """Keep the object from removal until ``until`` (never shortens a longer lock)."""
        ...

    async def extend_lock(self, key: str, until: datetime) -> None:
        """Keep the object (the version a download serves) from removal until at least
        ``until``: a lock that ends later stays as it is, one that ends sooner is extended
        (S3: PutObjectRetention in COMPLIANCE mode; never shortened)."""
        ...

    async def hold(self, key: str, held: bool) -> None:
        """Place (or release) a legal hold on the object: while held, nobody can remove it,
        whatever its lock says (S3 PutObjectLegalHold; releasing leaves its lock as it is)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the object (every version); ``ObjectLockedError`` inside its lock or
        while held."""
        ...

    async def delete_many(self, keys: Sequence[str]) -> dict[str, Exception]:
        """``delete`` of each object, in as few requests as storage takes (S3
        DeleteObjects); the keys it kept, each with why: ``ObjectLockedError`` inside its
        lock or while held, ``UpstreamUnavailableError`` when storage failed. A key already
        gone counts as removed."""
        ...

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every object below ``prefix/``; ``ObjectLockedError`` if one is locked
        (the others are removed all the same)."""
        ...

    async def presign_get(
        self, key: str, expires_at: datetime, *, filename: str | None = None
    ) -> PresignedRequest:
        """A download of the object (async: a versioned store may look up which version
        to serve); with ``filename``, the answer saves it under that name
        (``Content-Disposition: attachment``)."""
        ...
