"""S3 object storage through the minio SDK (SeaweedFS, MinIO, AWS...).

One bucket with Object Lock enabled (hence versioning) holds every workspace, one prefix
per namespace. ``region`` is always set, so presigning is a local computation: no request
asks the store for the bucket's region. URLs are presigned here (Signature V4, path
style, the day's signing key cached), which is several times cheaper than minio's own.
On confirm the use case sets each object's retention in COMPLIANCE mode until
``locked_until`` (rounded up to a whole second, never down): then nobody, the root
credentials of the store included, can delete that version or shorten its retention
before that time.

Every minio or connection error is turned into a port error here, in ``_translated``:
``ObjectLockedError`` for the store's refusals of a locked object, ``UpstreamUnavailable``
for the rest. The multipart calls use minio's underscore methods (create, list parts,
complete, abort, list uploads): the SDK offers no public API for presigned multipart.

minio blocks, so the port's I/O methods are coroutines that run the blocking calls (private
methods of the same name with a leading underscore) in a worker thread through
``asyncio.to_thread``. Every request stays bounded by the HTTP client's timeouts (5 s to
connect, ``timeout`` to read, ``STRONGROOM_S3_TIMEOUT`` for the service's store; two
retries of a refused connection or a 502-504, none of a read that timed out), the calls to
a customer's bucket included.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit
from uuid import UUID

import urllib3
from minio import Minio
from minio.commonconfig import COMPLIANCE
from minio.datatypes import Part
from minio.error import MinioException, S3Error
from minio.retention import Retention

from strongroom.adapters.resolver import Resolver
from strongroom.adapters.storage.digest import hash_stream
from strongroom.adapters.storage.disposition import content_disposition
from strongroom.adapters.storage.locks import extend_retention
from strongroom.adapters.storage.outbound import guarded_pool_manager
from strongroom.adapters.storage.s3_deletes import LOCK_REFUSALS, delete_many, delete_versions
from strongroom.adapters.storage.s3_locks import lock_status
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.domain.proofs import StorageLock
from strongroom.ports.driven.storage import (
    ObjectLockedError,
    PendingUpload,
    PresignedRequest,
    StoredObject,
    StoredPart,
)

logger = logging.getLogger(__name__)

_GONE = {"NoSuchKey", "NoSuchUpload", "NoSuchVersion"}
# How stores say an object version has no retention (SeaweedFS uses the second).
_NO_RETENTION = {"NoSuchObjectLockConfiguration", "ObjectLockConfigurationNotFoundError"}


@contextlib.contextmanager
def _translated(what: str, *, opaque: bool = False, may_lock: bool = False) -> Iterator[None]:
    """Storage failures as port errors. A refusal is ``ObjectLockedError`` only where a
    lock can refuse (``may_lock``: deleting, setting a retention); elsewhere, a HEAD or GET
    answered 403 (wrong credentials of a customer's bucket) is the store failing. ``opaque``
    (a customer's endpoint) keeps the cause of a failure to reach the store out of the
    error, so that an unreachable, refused or disallowed endpoint is one answer (contract
    13); it is logged instead."""
    try:
        yield
    except S3Error as error:
        if may_lock and error.code in LOCK_REFUSALS:
            raise ObjectLockedError(f"storage refused to {what}: {error.code}") from error
        raise UpstreamUnavailableError(f"object storage failed to {what}") from error
    except (MinioException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
        if not opaque:
            raise UpstreamUnavailableError(f"object storage failed to {what}") from error
        logger.info("a customer's object storage failed to %s: %r", what, error)
        raise UpstreamUnavailableError(f"object storage failed to {what}") from None


def retain_until_date(until: datetime) -> datetime:
    """The Object Lock retain-until date for a lock until ``until``: in UTC, rounded up to
    the next whole second, never down (contract 13).

    Stores keep whole seconds (SeaweedFS drops the milliseconds minio sends), so a date
    truncated there would free the object up to a second before the API's ``locked_until``.
    """
    moment = until.astimezone(UTC)
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


class _Presigner:
    """AWS Signature V4 query presigning, computed locally with the day's signing key
    cached (what minio's presigner does, without re-deriving the key on every URL)."""

    def __init__(self, base: str, access_key: str, secret_key: str, region: str) -> None:
        parts = urlsplit(base)
        self._scheme, self._host = parts.scheme, parts.netloc
        self._access_key, self._secret_key, self._region = access_key, secret_key, region
        self._keys: dict[str, bytes] = {}

    def _signing_key(self, day: str) -> bytes:
        key = self._keys.get(day)
        if key is None:
            key = ("AWS4" + self._secret_key).encode()
            for part in (day, self._region, "s3", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._keys = {day: key}
        return key

    def url(
        self,
        method: str,
        path: str,
        expires: int,
        extra: dict[str, str] | None = None,
        now: datetime | None = None,
        content_length: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> str:
        """A presigned URL of ``method`` on ``path`` (``/bucket/key``) for ``expires`` s;
        ``content_length`` and ``headers`` are signed: the request must send them as given."""
        signing = {"host": self._host, **{name.lower(): v for name, v in (headers or {}).items()}}
        if content_length is not None:
            signing["content-length"] = str(content_length)
        signed = ";".join(sorted(signing))
        canonical_headers = "".join(f"{name}:{signing[name].strip()}\n" for name in sorted(signing))
        moment = now or datetime.now(UTC)
        stamp = moment.strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        scope = f"{day}/{self._region}/s3/aws4_request"
        query = {
            "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
            "X-Amz-Credential": f"{self._access_key}/{scope}",
            "X-Amz-Date": stamp,
            "X-Amz-Expires": str(expires),
            "X-Amz-SignedHeaders": signed,
            **(extra or {}),
        }
        canonical_query = "&".join(
            f"{quote(name, safe='-_.~')}={quote(value, safe='-_.~')}"
            for name, value in sorted(query.items())
        )
        canonical_path = quote(path, safe="/-_.~")
        canonical = (
            f"{method}\n{canonical_path}\n{canonical_query}\n{canonical_headers}\n{signed}\n"
            "UNSIGNED-PAYLOAD"
        )
        to_sign = (
            f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n" + hashlib.sha256(canonical.encode()).hexdigest()
        )
        signature = hmac.new(self._signing_key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        return (
            f"{self._scheme}://{self._host}{canonical_path}?{canonical_query}"
            f"&X-Amz-Signature={signature}"
        )


class _ObjectStream:
    """A GetObject response read as a stream; ``close`` returns its connection."""

    def __init__(self, response: Any) -> None:
        self._response = response

    def read(self, size: int = -1, /) -> bytes:
        data: bytes = self._response.read(None if size < 0 else size)
        return data

    def close(self) -> None:
        self._response.close()
        self._response.release_conn()


class S3Storage:
    """Objects in one S3 bucket with Object Lock; see the module documentation."""

    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        bucket: str,
        region: str = "us-east-1",
        *,
        timeout: float = 10.0,
        endpoint_policy: EndpointPolicy | None = None,
        resolve: Resolver | None = None,
        http_client: urllib3.PoolManager | None = None,
    ) -> None:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        self.bucket = bucket
        options: dict[str, Any] = {
            "timeout": urllib3.Timeout(connect=5.0, read=timeout),
            # Connection failures and 502-504 are retried, a read that timed out is not:
            # one call waits at most ``timeout`` for a store that accepts and says nothing.
            "retries": urllib3.Retry(
                total=2,
                connect=2,
                read=0,
                status=2,
                backoff_factor=0.2,
                status_forcelist=[502, 503, 504],
            ),
            "maxsize": 32,
        }
        # A customer's endpoint (``endpoint_policy`` given): every connection is checked
        # after resolution, and failures to reach it do not say why.
        self._opaque = endpoint_policy is not None or http_client is not None
        http = http_client or (
            urllib3.PoolManager(**options)
            if endpoint_policy is None
            else guarded_pool_manager(endpoint_policy, resolve, **options)
        )
        base = f"{'https' if parts.scheme == 'https' else 'http'}://{parts.netloc}"
        self._presigner = _Presigner(base, access_key, secret_key, region)
        self.client = Minio(
            parts.netloc,
            access_key=access_key,
            secret_key=secret_key,
            secure=parts.scheme == "https",
            region=region,
            http_client=http,
        )

    def _translated(
        self, what: str, *, may_lock: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        return _translated(what, opaque=self._opaque, may_lock=may_lock)

    # ----------------------------------------------------------------------------------
    # Bucket and namespaces

    def ensure_bucket(self) -> None:
        """Create the bucket with Object Lock when it does not exist (blocking: called once
        at start-up, before the event loop serves anything)."""
        with self._translated("create the bucket"):
            if not self.client.bucket_exists(self.bucket):
                self.client.make_bucket(self.bucket, object_lock=True)

    async def provision_namespace(self, workspace_id: UUID) -> str:
        """A prefix per workspace; nothing to create in S3."""
        return f"ws-{workspace_id.hex}"

    async def remove_namespace(self, namespace: str) -> None:
        """Remove every object version below the namespace's prefix."""
        await asyncio.to_thread(self._delete_prefix, namespace)

    async def ping(self) -> None:
        """The bucket must answer."""
        await asyncio.to_thread(self._ping)

    def _ping(self) -> None:
        with self._translated("answer"):
            if not self.client.bucket_exists(self.bucket):
                raise UpstreamUnavailableError(f"bucket {self.bucket} does not exist")

    # ----------------------------------------------------------------------------------
    # Presigning (no network: the region is set)

    def _presign(
        self,
        method: str,
        key: str,
        expires_at: datetime,
        query: dict[str, str] | None = None,
        content_length: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> str:
        seconds = int((expires_at - datetime.now(UTC)).total_seconds())
        expires = min(max(1, seconds), 7 * 24 * 3600)
        return self._presigner.url(
            method,
            f"/{self.bucket}/{key}",
            expires,
            query,
            content_length=content_length,
            headers=headers,
        )

    def presign_put(
        self, key: str, size: int, sha256: str, expires_at: datetime
    ) -> PresignedRequest:
        """A presigned PUT bound to its exact ``Content-Length`` and to the announced
        digest: ``x-amz-checksum-sha256`` (base64) is a signed header, so the store
        refuses other bytes of the same size (contract 13)."""
        checksum = {"x-amz-checksum-sha256": base64.b64encode(bytes.fromhex(sha256)).decode()}
        url = self._presign("PUT", key, expires_at, content_length=size, headers=checksum)
        return PresignedRequest("PUT", url, {"Content-Length": str(size), **checksum})

    def presign_part(
        self, key: str, upload_id: str, number: int, size: int, expires_at: datetime
    ) -> PresignedRequest:
        """A presigned UploadPart."""
        query = {"uploadId": upload_id, "partNumber": str(number)}
        url = self._presign("PUT", key, expires_at, query, content_length=size)
        return PresignedRequest("PUT", url, {"Content-Length": str(size)})

    async def presign_get(
        self, key: str, expires_at: datetime, *, filename: str | None = None
    ) -> PresignedRequest:
        """A presigned GET of the locked version when there is one.

        A still-valid upload URL can add a newer version over a confirmed object (the
        bucket is versioned); the version that confirm locked is the one to serve. Finding
        it asks the store (bounded by the client's timeouts), so unlike the other
        presigning methods this one is not a local computation.
        """
        return await asyncio.to_thread(self._presign_get, key, expires_at, filename)

    def _presign_get(
        self, key: str, expires_at: datetime, filename: str | None
    ) -> PresignedRequest:
        query: dict[str, str] = {}
        locked = self._locked_version(key)
        if locked is not None:
            query["versionId"] = locked
        if filename is not None:
            # The store answers with this header (a signed query parameter, S3 GetObject).
            query["response-content-disposition"] = content_disposition(filename)
        return PresignedRequest("GET", self._presign("GET", key, expires_at, query or None))

    def _locked_version(self, key: str) -> str | None:
        """The newest version of ``key`` under a retention, if any."""
        with self._translated("list object versions"):
            listed = [
                item
                for item in self.client.list_objects(self.bucket, prefix=key, include_version=True)
                if item.object_name == key and item.version_id and not item.is_delete_marker
            ]
            listed.sort(key=lambda item: item.last_modified or datetime.min.replace(tzinfo=UTC))
            for item in reversed(listed):
                try:
                    retention = self.client.get_object_retention(
                        self.bucket, key, version_id=item.version_id
                    )
                except S3Error as error:
                    if error.code not in _NO_RETENTION:
                        raise
                    retention = None
                if retention is not None and retention.mode == COMPLIANCE:
                    return str(item.version_id)
        return None

    # ----------------------------------------------------------------------------------
    # Multipart

    async def start_multipart(self, key: str) -> str:
        """CreateMultipartUpload."""
        return await asyncio.to_thread(self._start_multipart, key)

    def _start_multipart(self, key: str) -> str:
        with self._translated("start a multipart upload"):
            upload_id: str = self.client._create_multipart_upload(self.bucket, key, {})
        return upload_id

    async def put(self, key: str, data: bytes, sha256: str) -> None:
        """PutObject with ``x-amz-checksum-sha256``: the store refuses other bytes."""
        await asyncio.to_thread(self._put, key, data, sha256)

    def _put(self, key: str, data: bytes, sha256: str) -> None:
        checksum = base64.b64encode(bytes.fromhex(sha256)).decode()
        with self._translated("store an object"):
            self.client._put_object(
                self.bucket, key, data, headers={"x-amz-checksum-sha256": checksum}
            )

    async def upload_part(self, key: str, upload_id: str, number: int, data: bytes) -> StoredPart:
        """UploadPart."""
        return await asyncio.to_thread(self._upload_part, key, upload_id, number, data)

    def _upload_part(self, key: str, upload_id: str, number: int, data: bytes) -> StoredPart:
        with self._translated("upload a part"):
            etag: str = self.client._upload_part(self.bucket, key, data, None, upload_id, number)
        return StoredPart(number, len(data), etag)

    async def list_parts(self, key: str, upload_id: str) -> list[StoredPart] | None:
        """ListParts (every page); None when the upload is gone."""
        return await asyncio.to_thread(self._list_parts, key, upload_id)

    def _list_parts(self, key: str, upload_id: str) -> list[StoredPart] | None:
        found: list[StoredPart] = []
        marker: str | None = None
        try:
            with self._translated("list parts"):
                while True:
                    result = self.client._list_parts(
                        self.bucket, key, upload_id, part_number_marker=marker
                    )
                    found.extend(
                        StoredPart(part.part_number, part.size or 0, part.etag)
                        for part in result.parts
                    )
                    if not result.is_truncated:
                        return found
                    marker = result.next_part_number_marker
        except UpstreamUnavailableError as error:
            cause = error.__cause__
            if isinstance(cause, S3Error) and cause.code in _GONE:
                return None
            raise

    async def complete_multipart(self, key: str, upload_id: str, parts: list[StoredPart]) -> None:
        """CompleteMultipartUpload."""
        await asyncio.to_thread(self._complete_multipart, key, upload_id, parts)

    def _complete_multipart(self, key: str, upload_id: str, parts: list[StoredPart]) -> None:
        ordered = [Part(p.number, p.etag) for p in sorted(parts, key=lambda p: p.number)]
        with self._translated("complete a multipart upload"):
            self.client._complete_multipart_upload(self.bucket, key, upload_id, ordered)

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        """AbortMultipartUpload (an upload already gone is fine)."""
        await asyncio.to_thread(self._abort_multipart, key, upload_id)

    def _abort_multipart(self, key: str, upload_id: str) -> None:
        try:
            with self._translated("abort a multipart upload"):
                self.client._abort_multipart_upload(self.bucket, key, upload_id)
        except UpstreamUnavailableError as error:
            cause = error.__cause__
            if not (isinstance(cause, S3Error) and cause.code in _GONE):
                raise

    async def pending_uploads(self, older_than: datetime) -> list[PendingUpload]:
        """ListMultipartUploads, filtered by initiation time."""
        return await asyncio.to_thread(self._pending_uploads, older_than)

    def _pending_uploads(self, older_than: datetime) -> list[PendingUpload]:
        found: list[PendingUpload] = []
        key_marker: str | None = None
        upload_marker: str | None = None
        with self._translated("list multipart uploads"):
            while True:
                result = self.client._list_multipart_uploads(
                    self.bucket, key_marker=key_marker, upload_id_marker=upload_marker
                )
                for upload in result.uploads:
                    initiated = upload.initiated_time
                    if upload.upload_id and initiated is not None and initiated < older_than:
                        found.append(PendingUpload(upload.object_name, upload.upload_id, initiated))
                if not result.is_truncated:
                    return found
                key_marker = result.next_key_marker
                upload_marker = result.next_upload_id_marker

    # ----------------------------------------------------------------------------------
    # Objects

    async def stat(self, key: str) -> StoredObject | None:
        """HeadObject: the size (S3 cannot tell a whole object's sha256)."""
        return await asyncio.to_thread(self._stat, key)

    def _stat(self, key: str) -> StoredObject | None:
        try:
            with self._translated("stat an object"):
                info = self.client.stat_object(self.bucket, key)
        except UpstreamUnavailableError as error:
            cause = error.__cause__
            if isinstance(cause, S3Error) and cause.code in _GONE | {"NoSuchObject"}:
                return None
            raise
        return StoredObject(int(info.size or 0))

    async def read_digest(self, key: str) -> StoredObject | None:
        """GetObject of the version a download serves (the locked one when there is one),
        hashed as it streams; every read is bounded by the client's read timeout."""
        return await asyncio.to_thread(self._read_digest, key)

    def _read_digest(self, key: str) -> StoredObject | None:
        try:
            with self._translated("read an object"):
                version = self._locked_version(key)
                response = self.client.get_object(self.bucket, key, version_id=version)
                try:
                    digest, size = hash_stream(response.read)
                finally:
                    response.close()
                    response.release_conn()
        except UpstreamUnavailableError as error:
            cause = error.__cause__
            if isinstance(cause, S3Error) and cause.code in _GONE | {"NoSuchObject"}:
                return None
            raise
        return StoredObject(size, digest)

    def open_object(self, key: str) -> _ObjectStream | None:
        """GetObject of the version a download serves, as a stream (each read bounded by
        the client's read timeout); None when the object is gone."""
        try:
            with self._translated("read an object"):
                version = self._locked_version(key)
                response = self.client.get_object(self.bucket, key, version_id=version)
        except UpstreamUnavailableError as error:
            cause = error.__cause__
            if isinstance(cause, S3Error) and cause.code in _GONE | {"NoSuchObject"}:
                return None
            raise
        return _ObjectStream(response)

    async def lock_status(self, key: str) -> StorageLock:
        """What the store reports of the object's lock now (``s3_locks``)."""
        return await asyncio.to_thread(self._lock_status, key)

    def _lock_status(self, key: str) -> StorageLock:
        with self._translated("read an object's lock"):
            return lock_status(self.client, self.bucket, key, self._locked_version(key))

    async def lock(self, key: str, until: datetime) -> None:
        """PutObjectRetention in COMPLIANCE mode on the current version, until ``until``
        rounded up to a whole second (``retain_until_date``)."""
        await asyncio.to_thread(self._lock, key, until)

    def _lock(self, key: str, until: datetime) -> None:
        with self._translated("lock an object", may_lock=True):
            info = self.client.stat_object(self.bucket, key)
            self.client.set_object_retention(
                self.bucket,
                key,
                Retention(COMPLIANCE, retain_until_date(until)),
                version_id=info.version_id,
            )

    async def extend_lock(self, key: str, until: datetime) -> None:
        """PutObjectRetention in COMPLIANCE mode on the locked version (the one downloads
        serve; the current one if none is locked), unless it is retained until ``until``
        (rounded up to a whole second) or later: never shortened."""
        await asyncio.to_thread(self._extend_lock, key, until)

    def _extend_lock(self, key: str, until: datetime) -> None:
        version = self._locked_version(key)
        with self._translated("extend an object's lock", may_lock=True):
            version = version or self.client.stat_object(self.bucket, key).version_id
            extend_retention(self.client, self.bucket, key, version, retain_until_date(until))

    async def hold(self, key: str, held: bool) -> None:
        """PutObjectLegalHold ON (or OFF) on every version of the object: while ON, the
        store refuses to delete a version, whoever asks; OFF leaves its retention as it is."""
        await asyncio.to_thread(self._hold, key, held)

    def _hold(self, key: str, held: bool) -> None:
        switch = (
            self.client.enable_object_legal_hold if held else self.client.disable_object_legal_hold
        )
        for version in self._versions(key, exact=True):
            with self._translated("hold an object"):
                switch(self.bucket, key, version_id=version)

    async def delete(self, key: str) -> None:
        """Delete every version of the object (the store refuses a locked or held one)."""
        await asyncio.to_thread(self._delete, key)

    def _delete(self, key: str) -> None:
        for version in self._versions(key, exact=True):
            with self._translated("delete an object", may_lock=True):
                self.client.remove_object(self.bucket, key, version_id=version)

    async def delete_many(self, keys: Sequence[str]) -> dict[str, Exception]:
        """Every version of each object, by DeleteObjects; the keys kept, each with why."""
        return await asyncio.to_thread(
            delete_many, self.client, self.bucket, keys, self._translated
        )

    async def delete_prefix(self, prefix: str) -> None:
        """Delete every version below ``prefix/``; locked ones stay (then
        ``ObjectLockedError``)."""
        await asyncio.to_thread(self._delete_prefix, prefix)

    def _delete_prefix(self, prefix: str) -> None:
        with self._translated("list objects"):
            listed = self.client.list_objects(
                self.bucket, prefix=prefix + "/", recursive=True, include_version=True
            )
            versions = [(str(item.object_name), item.version_id) for item in listed]
        kept = delete_versions(self.client, self.bucket, versions, self._translated)
        if failed := [e for e in kept.values() if not isinstance(e, ObjectLockedError)]:
            raise failed[0]
        if kept:
            raise ObjectLockedError(f"{len(kept)} objects below {prefix} are locked")

    def _versions(self, key: str, *, exact: bool) -> list[str | None]:
        with self._translated("list object versions"):
            listed: list[Any] = list(
                self.client.list_objects(self.bucket, prefix=key, include_version=True)
            )
        return [item.version_id for item in listed if not exact or item.object_name == key]
