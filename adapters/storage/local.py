"""Local-disk object storage: the embedded default.

Objects live under ``<root>/objects/<key>``, their metadata (size, sha256, lock, legal
hold) under ``<root>/meta/<key>.json``, unfinished multipart uploads under
``<root>/uploads/<id>``; every write goes through ``<root>/tmp`` and is renamed into place.
Presigned URLs are paths below ``/storage/`` served by the same process (``local_routes``),
signed by an HMAC-SHA256 over the method, key, expiry, exact size and sha256 where known,
and upload id and part number: good for one method on one object until it expires,
checked in constant time. Keys match a strict pattern and resolve below the root.
Locks and holds are the adapter's own: a locked or held object cannot be removed or
overwritten, nor its lock shortened, whoever asks. The I/O methods run their blocking
work (the private method of the same name) in a worker thread; presigning, verifying and
receiving a body (``open_writer``, ``Writer``) stay synchronous.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlencode
from uuid import UUID

from strongroom.adapters.storage.digest import hash_stream
from strongroom.adapters.storage.local_parts import (
    Grant,
    StorageRefusalError,
    disk_errors,
    read_json,
)
from strongroom.adapters.storage.locks import ExtendsLocks
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.domain.proofs import StorageLock
from strongroom.domain.timestamps import format_timestamp
from strongroom.ports.driven.storage import (
    ObjectLockedError,
    PendingUpload,
    PresignedRequest,
    StoredObject,
    StoredPart,
)

URL_PREFIX = "/storage/"
_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
KEY_PATTERN = re.compile(rf"^{_SEGMENT}(?:/{_SEGMENT}){{0,15}}$")
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
CHUNK = 1024 * 1024


def _now() -> datetime:
    return datetime.now(UTC)


def _check_key(key: str) -> str:
    if not KEY_PATTERN.match(key):
        raise StorageRefusalError(400, "invalid object key")
    return key


class LocalDiskStorage(ExtendsLocks):
    """Objects in a directory; see the module documentation."""

    def __init__(
        self,
        root: Path | None,
        signing_key: bytes,
        *,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._root = root
        self._root_lock = threading.Lock()
        self._key = hmac.new(signing_key, b"strongroom local storage", hashlib.sha256).digest()
        self._clock = clock
        self._bases: dict[str, Path] = {}

    # ----------------------------------------------------------------------------------
    # Layout

    @property
    def root(self) -> Path:
        """The storage directory (a fresh temporary one when none was given)."""
        if self._root is None:
            with self._root_lock:  # worker threads may ask at once: make only one
                if self._root is None:
                    self._root = Path(tempfile.mkdtemp(prefix="strongroom-objects-"))
        return self._root

    def _path(self, area: str, key: str, suffix: str = "") -> Path:
        base = self._bases.get(area)
        if base is None:
            base = self._bases[area] = (self.root / area).resolve()
        # Inside ``base`` by its text: KEY_PATTERN admits no ``..`` and no empty segment,
        # so the normalised path is the joined one (checked all the same, as a guard).
        # No symbolic link is resolved: the storage makes every directory under ``base``.
        joined = os.path.join(base, _check_key(key) + suffix)
        if os.path.normpath(joined) != joined:
            raise StorageRefusalError(400, "invalid object key")
        return Path(joined)

    def object_path(self, key: str) -> Path:
        """Where the object ``key`` is stored."""
        return self._path("objects", key)

    def _meta_path(self, key: str) -> Path:
        return self._path("meta", key, ".json")

    def _upload_dir(self, upload_id: str) -> Path:
        if not _UPLOAD_ID.match(upload_id):
            raise StorageRefusalError(400, "invalid upload id")
        return self.root / "uploads" / upload_id

    def _tmp(self) -> Path:
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp

    def _write_json(self, path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self._tmp())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(name, path)

    def _meta(self, key: str, path: Path | None = None) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(
                (path or self._meta_path(key)).read_text(encoding="utf-8")
            )
        except FileNotFoundError:
            return None
        return data

    def _locked_until(self, key: str) -> datetime | None:
        meta = self._meta(key)
        if meta is None or meta.get("locked_until") is None:
            return None
        return datetime.fromisoformat(meta["locked_until"])

    def _ensure_unlocked(self, key: str, meta_path: Path | None = None) -> None:
        meta = self._meta(key, meta_path) or {}
        stored = meta.get("locked_until")
        until = None if stored is None else datetime.fromisoformat(stored)
        if until is not None and self._clock() < until:
            raise ObjectLockedError(f"object {key} is locked until {format_timestamp(until)}")
        if meta.get("held"):
            raise ObjectLockedError(f"object {key} is under a legal hold")

    # ----------------------------------------------------------------------------------
    # Namespaces

    async def provision_namespace(self, workspace_id: UUID) -> str:
        """A directory per workspace, named after it."""
        return await asyncio.to_thread(self._provision_namespace, workspace_id)

    def _provision_namespace(self, workspace_id: UUID) -> str:
        namespace = f"ws-{workspace_id.hex}"
        try:
            self.object_path(namespace).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UpstreamUnavailableError("object storage is unavailable") from error
        return namespace

    async def remove_namespace(self, namespace: str) -> None:
        """Remove every object of a namespace; ``ObjectLockedError`` if one is locked (the
        unlocked ones are removed all the same)."""
        await asyncio.to_thread(self._delete_prefix, namespace)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every object below ``prefix`` but locked ones (then ``ObjectLockedError``)."""
        await asyncio.to_thread(self._delete_prefix, prefix)

    @disk_errors
    def _delete_prefix(self, prefix: str) -> None:
        base = self.object_path(prefix)
        files = [path for path in sorted(base.rglob("*"), reverse=True) if path.is_file()]
        kept = self._delete_many([p.relative_to(self.root / "objects").as_posix() for p in files])
        if failed := [e for e in kept.values() if not isinstance(e, ObjectLockedError)]:
            raise failed[0]
        if kept:
            raise ObjectLockedError(f"{len(kept)} objects below {prefix} are locked")
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(self._path("meta", prefix), ignore_errors=True)

    async def ping(self) -> None:
        """The directory must exist and be writable."""
        await asyncio.to_thread(self._ping)

    def _ping(self) -> None:
        try:
            self._tmp()
            with tempfile.TemporaryFile(dir=self._tmp()):
                pass
        except OSError as error:
            raise UpstreamUnavailableError("object storage is unavailable") from error

    # ----------------------------------------------------------------------------------
    # Presigning

    def _signature(self, method: str, key: str, fields: dict[str, str]) -> str:
        message = "\n".join(
            [
                method,
                key,
                fields.get("expires", ""),
                fields.get("size", ""),
                fields.get("sha256", ""),
                fields.get("upload_id", ""),
                fields.get("part", ""),
                fields.get("filename", ""),
            ]
        )
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()

    def _presign(self, method: str, key: str, expires_at: datetime, **extra: str) -> str:
        fields = {"expires": str(int(expires_at.timestamp())), **extra}
        fields["signature"] = self._signature(method, _check_key(key), fields)
        return f"{URL_PREFIX}{key}?{urlencode(fields)}"

    def presign_put(
        self, key: str, size: int, sha256: str, expires_at: datetime
    ) -> PresignedRequest:
        """A signed PUT of exactly ``size`` bytes whose digest must be ``sha256``."""
        url = self._presign("PUT", key, expires_at, size=str(size), sha256=sha256)
        return PresignedRequest("PUT", url, {"Content-Length": str(size)})

    def presign_part(
        self, key: str, upload_id: str, number: int, size: int, expires_at: datetime
    ) -> PresignedRequest:
        """A signed PUT of part ``number``."""
        url = self._presign(
            "PUT", key, expires_at, size=str(size), upload_id=upload_id, part=str(number)
        )
        return PresignedRequest("PUT", url, {"Content-Length": str(size)})

    async def presign_get(
        self, key: str, expires_at: datetime, *, filename: str | None = None
    ) -> PresignedRequest:
        """A signed GET of the object; ``filename`` (signed too) names the download."""
        extra = {} if filename is None else {"filename": filename}
        return PresignedRequest("GET", self._presign("GET", key, expires_at, **extra))

    def verify(self, method: str, key: str, query: dict[str, str]) -> Grant:
        """The grant of a presigned request; ``StorageRefusalError`` unless its signature
        matches (compared in constant time) and it has not expired."""
        _check_key(key)
        signature = query.get("signature", "")
        expected = self._signature(method, key, query)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            raise StorageRefusalError(403, "signature does not match")
        try:
            expires = int(query["expires"])
            size = int(query["size"]) if "size" in query else None
            part = int(query["part"]) if "part" in query else None
        except (KeyError, ValueError) as error:
            raise StorageRefusalError(403, "malformed presigned URL") from error
        if self._clock().timestamp() >= expires:
            raise StorageRefusalError(403, "presigned URL expired")
        return Grant(
            method,
            key,
            size,
            query.get("sha256"),
            query.get("upload_id"),
            part,
            query.get("filename"),
        )

    # ----------------------------------------------------------------------------------
    # Receiving bytes (the storage endpoint)

    @contextlib.contextmanager
    def _temporary(self) -> Iterator[tuple[BinaryIO, Path]]:
        fd, name = tempfile.mkstemp(dir=self._tmp())
        path = Path(name)
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle, path
        finally:
            path.unlink(missing_ok=True)

    def open_writer(self, grant: Grant) -> Writer:
        """A writer for the body of a verified PUT: an object, or a part of an upload.

        Refused at once when the object is locked or the upload does not exist, before a
        single byte is read.
        """
        if grant.upload_id is not None and grant.part is not None:
            upload = self._upload_dir(grant.upload_id)
            info = read_json(upload / "info.json")
            if info is None or info["key"] != grant.key:
                raise StorageRefusalError(404, "no such multipart upload")
        else:
            self._ensure_writable(grant.key)
        fd, name = tempfile.mkstemp(dir=self._tmp())
        return Writer(self, grant, os.fdopen(fd, "wb"), Path(name))

    def store_received(self, grant: Grant, path: Path, size: int, digest: str) -> None:
        """Move a received body into place (called by ``Writer.finish``)."""
        if grant.upload_id is not None and grant.part is not None:
            upload = self._upload_dir(grant.upload_id)
            name = f"part-{grant.part:05d}"
            os.replace(path, upload / name)
            self._write_json(upload / f"{name}.json", {"size": size, "etag": digest})
            return
        if grant.sha256 is not None and digest != grant.sha256:
            raise StorageRefusalError(400, "body does not match the announced sha256")
        self._ensure_writable(grant.key)
        target = self.object_path(grant.key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        self._write_json(self._meta_path(grant.key), {"size": size, "sha256": digest})

    def _ensure_writable(self, key: str) -> None:
        try:
            self._ensure_unlocked(key)
        except ObjectLockedError as error:
            raise StorageRefusalError(403, "object is locked") from error

    # ----------------------------------------------------------------------------------
    # The service's own writes

    async def put(self, key: str, data: bytes, sha256: str) -> None:
        """Store ``data`` as the object ``key``; refused unless its digest is ``sha256``."""
        await asyncio.to_thread(self._write, Grant("PUT", key, len(data), sha256, None, None), data)

    async def upload_part(self, key: str, upload_id: str, number: int, data: bytes) -> StoredPart:
        """Store part ``number`` of the upload ``upload_id`` of ``key``."""
        grant = Grant("PUT", key, len(data), None, upload_id, number)
        digest = await asyncio.to_thread(self._write, grant, data)
        return StoredPart(number, len(data), digest)

    @disk_errors
    def _write(self, grant: Grant, data: bytes) -> str:
        try:
            writer = self.open_writer(grant)
            writer.write(data)
            writer.finish()
        except StorageRefusalError as error:
            raise UpstreamUnavailableError(f"object storage refused a write: {error}") from error
        return hashlib.sha256(data).hexdigest()

    # ----------------------------------------------------------------------------------
    # Multipart

    async def start_multipart(self, key: str) -> str:
        """A new upload directory."""
        return await asyncio.to_thread(self._start_multipart, key)

    @disk_errors
    def _start_multipart(self, key: str) -> str:
        upload_id = secrets.token_hex(16)
        self._write_json(
            self._upload_dir(upload_id) / "info.json",
            {"key": _check_key(key), "initiated_at": self._clock().isoformat()},
        )
        return upload_id

    async def list_parts(self, key: str, upload_id: str) -> list[StoredPart] | None:
        """The parts whose bytes arrived completely."""
        return await asyncio.to_thread(self._list_parts, key, upload_id)

    @disk_errors
    def _list_parts(self, key: str, upload_id: str) -> list[StoredPart] | None:
        upload = self._upload_dir(upload_id)
        info = read_json(upload / "info.json")
        if info is None or info["key"] != key:
            return None
        parts = []
        for meta in sorted(upload.glob("part-*.json")):
            data = read_json(meta)
            if data is not None:
                number = int(meta.name.removeprefix("part-").removesuffix(".json"))
                parts.append(StoredPart(number, data["size"], data["etag"]))
        return parts

    async def complete_multipart(self, key: str, upload_id: str, parts: list[StoredPart]) -> None:
        """Concatenate the parts into the object, computing its sha256 on the way."""
        await asyncio.to_thread(self._complete_multipart, key, upload_id, parts)

    @disk_errors
    def _complete_multipart(self, key: str, upload_id: str, parts: list[StoredPart]) -> None:
        upload = self._upload_dir(upload_id)
        self._ensure_unlocked(key)
        with self._temporary() as (handle, path):
            digest = hashlib.sha256()
            size = 0
            for part in sorted(parts, key=lambda p: p.number):
                with (upload / f"part-{part.number:05d}").open("rb") as source:
                    while block := source.read(CHUNK):
                        digest.update(block)
                        handle.write(block)
                        size += len(block)
            handle.flush()
            os.fsync(handle.fileno())
            target = self.object_path(key)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        self._write_json(self._meta_path(key), {"size": size, "sha256": digest.hexdigest()})
        shutil.rmtree(upload, ignore_errors=True)

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop the upload directory."""
        await asyncio.to_thread(self._abort_multipart, key, upload_id)

    @disk_errors
    def _abort_multipart(self, key: str, upload_id: str) -> None:
        upload = self._upload_dir(upload_id)
        info = read_json(upload / "info.json")
        if info is not None and info["key"] == key:
            shutil.rmtree(upload, ignore_errors=True)

    async def pending_uploads(self, older_than: datetime) -> list[PendingUpload]:
        """Uploads begun before ``older_than``."""
        return await asyncio.to_thread(self._pending_uploads, older_than)

    @disk_errors
    def _pending_uploads(self, older_than: datetime) -> list[PendingUpload]:
        found = []
        for info_path in (self.root / "uploads").glob("*/info.json"):
            info = read_json(info_path)
            if info is None:
                continue
            initiated = datetime.fromisoformat(info["initiated_at"])
            if initiated < older_than:
                found.append(PendingUpload(info["key"], info_path.parent.name, initiated))
        return found

    # ----------------------------------------------------------------------------------
    # Objects

    async def stat(self, key: str) -> StoredObject | None:
        """Size and sha256 (this storage always knows the digest)."""
        return await asyncio.to_thread(self._stat, key)

    @disk_errors
    def _stat(self, key: str) -> StoredObject | None:
        meta = self._meta(key)
        if meta is None or not self.object_path(key).is_file():
            return None
        return StoredObject(meta["size"], meta["sha256"])

    async def read_digest(self, key: str) -> StoredObject | None:
        """Hash the object's bytes on disk (never the recorded digest: the file may have
        changed under it)."""
        return await asyncio.to_thread(self._read_digest, key)

    @disk_errors
    def _read_digest(self, key: str) -> StoredObject | None:
        try:
            handle = self.object_path(key).open("rb")
        except FileNotFoundError:
            return None
        with handle:
            digest, size = hash_stream(handle.read)
        return StoredObject(size, digest)

    @disk_errors
    def open_object(self, key: str) -> BinaryIO | None:
        """The object's file, opened for reading; None when it is gone."""
        try:
            return self.object_path(key).open("rb")
        except FileNotFoundError:
            return None

    async def lock_status(self, key: str) -> StorageLock:
        """This storage's own lock record of the object (nobody can shorten it)."""
        return await asyncio.to_thread(self._lock_status, key)

    @disk_errors
    def _lock_status(self, key: str) -> StorageLock:
        until = self._locked_until(key) if self._meta(key) is not None else None
        return StorageLock(mode=None if until is None else "COMPLIANCE", retain_until=until)

    async def lock(self, key: str, until: datetime) -> None:
        """Record the lock; a shorter one than already set is refused."""
        await asyncio.to_thread(self._lock, key, until)

    @disk_errors
    def _lock(self, key: str, until: datetime) -> None:
        meta = self._meta(key)
        if meta is None:
            raise UpstreamUnavailableError(f"object {key} is not in storage")
        current = self._locked_until(key)
        if current is not None and until < current:
            raise ObjectLockedError(f"object {key} is locked until {format_timestamp(current)}")
        self._write_json(self._meta_path(key), {**meta, "locked_until": until.isoformat()})

    async def hold(self, key: str, held: bool) -> None:
        """Record (or release) a legal hold: a held object cannot be removed or replaced."""
        await asyncio.to_thread(self._hold, key, held)

    @disk_errors
    def _hold(self, key: str, held: bool) -> None:
        meta = self._meta(key)
        if meta is None:
            raise UpstreamUnavailableError(f"object {key} is not in storage")
        self._write_json(self._meta_path(key), {**meta, "held": held})

    async def delete(self, key: str) -> None:
        """Remove the object and its metadata unless it is locked or held."""
        await asyncio.to_thread(self._delete, key)

    async def delete_many(self, keys: Sequence[str]) -> dict[str, Exception]:
        """``delete`` of each in one worker thread; the keys kept, each with why."""
        return await asyncio.to_thread(self._delete_many, keys)

    def _delete_many(self, keys: Sequence[str]) -> dict[str, Exception]:
        kept: dict[str, Exception] = {}
        for key in keys:
            try:
                self._delete(key)
            except (ObjectLockedError, UpstreamUnavailableError) as error:
                kept[key] = error
        return kept

    @disk_errors
    def _delete(self, key: str) -> None:
        meta = self._meta_path(key)
        self._ensure_unlocked(key, meta)
        self.object_path(key).unlink(missing_ok=True)
        meta.unlink(missing_ok=True)


class Writer:
    """Receives one PUT body chunk by chunk into a temporary file; ``finish`` checks the
    size against the signed one and renames it into place, ``abort`` drops it."""

    def __init__(self, storage: LocalDiskStorage, grant: Grant, handle: BinaryIO, path: Path):
        self._storage = storage
        self._grant = grant
        self._handle = handle
        self._path = path
        self._digest = hashlib.sha256()
        self._size = 0

    def write(self, chunk: bytes) -> None:
        """Append a chunk; more bytes than signed are refused at once."""
        self._size += len(chunk)
        if self._grant.size is not None and self._size > self._grant.size:
            raise StorageRefusalError(400, "body is longer than the signed size")
        self._digest.update(chunk)
        self._handle.write(chunk)

    def finish(self) -> None:
        """Check the size, make the bytes durable and move them into place."""
        try:
            if self._grant.size is not None and self._size != self._grant.size:
                raise StorageRefusalError(400, "body is shorter than the signed size")
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._storage.store_received(
                self._grant, self._path, self._size, self._digest.hexdigest()
            )
        finally:
            self.abort()

    def abort(self) -> None:
        """Drop the temporary file (nothing happens once it was moved into place)."""
        self._handle.close()
        self._path.unlink(missing_ok=True)
