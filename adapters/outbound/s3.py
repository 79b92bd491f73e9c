"""S3 endpoints a customer named, reached through the outbound policy: the minio client
of sources and restore targets, and ``CustomerBucket``, the ``ObjectStorage`` of a
``customer_s3`` destination.

Every connection is judged after resolution (``guarded_pool_manager``) and bounded by the
budget's ``exchange`` (connection and first answer; a refused or silent connection is not
retried). A failure is the stage's one message, answered at the budget's floor.

A HEAD answered 404 carries no body, so any HTTP server can say it: a customer bucket
counts an object as missing (409 ``artifact_missing`` upstream) only when a listing of the
bucket, which must parse as S3's XML, agrees. Anything else is "the destination could not
be reached".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from minio import Minio
from minio.error import S3Error

from strongroom.adapters.outbound.http import outbound_http
from strongroom.adapters.outbound.policy import Outbound, Stage, outbound_for
from strongroom.adapters.resolver import Resolver
from strongroom.adapters.storage.s3 import S3Storage
from strongroom.domain.backups import CustomerS3Destination
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.ports.driven.storage import StoredObject

# What a store says of an object or upload that is not there (the callers' ``None``).
_GONE = frozenset({"NoSuchKey", "NoSuchUpload", "NoSuchVersion", "NoSuchObject"})


def _parts(endpoint: str) -> tuple[str, bool]:
    """``host[:port]`` of an endpoint, and whether it is HTTPS (the default scheme)."""
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    return parts.netloc, parts.scheme == "https"


def s3_client(endpoint: str, credentials: Mapping[str, str], outbound: Outbound) -> Minio:
    """A minio client of a customer's endpoint (``access_key_id``/``secret_access_key``)."""
    netloc, secure = _parts(endpoint)
    return Minio(
        netloc,
        access_key=credentials["access_key_id"],
        secret_key=credentials["secret_access_key"],
        secure=secure,
        http_client=outbound_http(outbound),
    )


class CustomerBucket(S3Storage):
    """A ``customer_s3`` destination's bucket (no Object Lock assumed), within the
    outbound policy; every failure to reach it is ``Stage.DESTINATION``'s message."""

    def __init__(
        self,
        destination: CustomerS3Destination,
        credentials: Mapping[str, str],
        outbound: Outbound,
        stage: Stage = Stage.DESTINATION,
    ) -> None:
        super().__init__(
            destination.endpoint,
            credentials["access_key_id"],
            credentials["secret_access_key"],
            destination.bucket,
            http_client=outbound_http(outbound, maxsize=8),
        )
        self._outbound = outbound
        self._stage = stage

    @contextlib.contextmanager
    def _reached(self) -> Iterator[None]:
        """A store's "not there" stays an ``S3Error`` for the caller; any other failure is
        the stage's message at the budget's floor."""
        with self._outbound.stage(self._stage, UpstreamUnavailableError, keep=(_GoneError,)):
            try:
                yield
            except S3Error as error:
                if error.code in _GONE:
                    raise _GoneError(error) from error
                raise

    @contextlib.contextmanager
    def _translated(self, what: str, *, may_lock: bool = False) -> Iterator[None]:
        # The base class's callers read a store's "not there" from ``__cause__``.
        try:
            with self._reached():
                yield
        except _GoneError as gone:
            raise UpstreamUnavailableError(self._stage.message) from gone.error

    def _stat(self, key: str) -> StoredObject | None:
        with self._reached():
            try:
                info = self.client.stat_object(self.bucket, key)
            except S3Error as error:
                if error.code not in _GONE:
                    raise
            else:
                return StoredObject(int(info.size or 0))
            # HEAD's 404: only a listing that parses says the bucket lacks the object.
            listed = self.client.list_objects(self.bucket, prefix=key, recursive=True)
            first = next(iter(listed), None)
            if first is not None and first.object_name == key:
                return StoredObject(int(first.size or 0))
            return None


class _GoneError(Exception):
    """A store's own "no such key/upload/version" (an ``S3Error`` parsed from XML)."""

    def __init__(self, error: S3Error) -> None:
        super().__init__(error.code)
        self.error = error


def customer_bucket(
    destination: CustomerS3Destination,
    credentials: Mapping[str, str],
    policy: EndpointPolicy | Outbound,
    resolve: Resolver | None = None,
) -> S3Storage:
    """The storage of a ``customer_s3`` destination, with its own credentials (no Object
    Lock is assumed: the bucket is the customer's), reached through the outbound policy."""
    return CustomerBucket(destination, credentials, outbound_for(policy, resolve))
