"""Reading an S3 source: every object under its prefix into one tar.zst stream.

minio blocks, so the listing, the downloads, the tar framing and the compression run in a
worker thread (``thread_stream``) that hands compressed chunks to the event loop. The
listing is paginated by the SDK (ListObjectsV2, 1000 keys a page); each object is read in
``COPY_BUFFER`` pieces, so no object is ever held in memory. Connections go only to
addresses the endpoint policy allows, checked after every resolution
(``guarded_pool_manager``). Errors say what the store answered (its error code), never a
credential; an unreachable, refused or disallowed endpoint is one answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

import urllib3
from minio import Minio
from minio.error import MinioException, S3Error

from strongroom.adapters.resolver import Resolver
from strongroom.adapters.sources.archive import ArchiveWriter, ZstdSink
from strongroom.adapters.sources.threaded import ConsumerGoneError, Emit, thread_stream
from strongroom.adapters.storage.outbound import guarded_pool_manager
from strongroom.domain.backups import S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError

logger = logging.getLogger(__name__)

_DENIED = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "AllAccessDisabled",
}
UNREACHABLE = "source s3: the endpoint is unreachable"


def _client(
    source: S3Source,
    credentials: Mapping[str, str],
    policy: EndpointPolicy,
    resolve: Resolver | None,
) -> Minio:
    parts = urlsplit(source.endpoint if "://" in source.endpoint else f"https://{source.endpoint}")
    http = guarded_pool_manager(
        policy,
        resolve,
        timeout=urllib3.Timeout(connect=5.0, read=60.0),
        retries=urllib3.Retry(
            total=2,
            connect=2,
            read=0,
            status=2,
            backoff_factor=0.2,
            status_forcelist=[502, 503, 504],
        ),
        maxsize=4,
    )
    return Minio(
        parts.netloc,
        access_key=credentials["access_key_id"],
        secret_key=credentials["secret_access_key"],
        secure=parts.scheme == "https",
        http_client=http,
    )


def translated(error: Exception) -> SourceError:
    """A store's failure as the run's error: its S3 error code, never a credential."""
    if isinstance(error, S3Error):
        code = error.code or "error"
        if code in _DENIED:
            return SourceError(f"source s3: access denied ({code})")
        if code == "NoSuchBucket":
            return SourceError(f"source s3: bucket not found ({code})")
        return SourceError(f"source s3: the store refused the request ({code})")
    return SourceError(UNREACHABLE)


def archive_prefix(client: Minio, source: S3Source, emit: Emit) -> None:
    """List every object below the source's prefix and write the archive to ``emit``
    (blocking)."""
    prefix = source.prefix or ""
    sink = ZstdSink(emit)
    writer = ArchiveWriter(sink, source.bucket, prefix)
    try:
        for item in client.list_objects(source.bucket, prefix=prefix or None, recursive=True):
            key = str(item.object_name)
            response = client.get_object(source.bucket, key)
            try:
                mtime = item.last_modified.timestamp() if item.last_modified else 0.0
                writer.add(
                    key[len(prefix) :],
                    int(item.size or 0),
                    mtime,
                    str(item.etag or ""),
                    response,
                )
            except OSError as error:  # tarfile: the body ended before the listed size
                raise SourceError(f"source s3: object {key!r} changed while it was read") from error
            finally:
                response.close()
                response.release_conn()
        writer.finish()
    except (ConsumerGoneError, SourceError):
        raise
    except (S3Error, MinioException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
        logger.info("an S3 source failed: %s", type(error).__name__)
        raise translated(error) from None


class S3SourceReader:
    """Reads S3 sources as tar.zst streams (see the module documentation)."""

    def __init__(self, policy: EndpointPolicy, resolve: Resolver | None = None) -> None:
        self._policy = policy
        self._resolve = resolve

    def read(self, source: S3Source, credentials: Mapping[str, str]) -> AsyncIterator[bytes]:
        """The archive of every object below ``source.prefix``."""
        client = _client(source, credentials, self._policy, self._resolve)
        return thread_stream(lambda emit: archive_prefix(client, source, emit), "source-s3")
