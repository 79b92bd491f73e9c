"""Reading an S3 source: every object under its prefix into one tar.zst stream.

minio blocks, so the listing, the downloads, the tar framing and the compression run in a
worker thread (``thread_stream``) that hands compressed chunks to the event loop. The
listing is paginated by the SDK (ListObjectsV2, 1000 keys a page); each object is read in
``COPY_BUFFER`` pieces, so no object is ever held in memory. Connections follow the
outbound policy (``strongroom.adapters.outbound``): until the listing's first answer a
failure is "the source could not be reached", afterwards "the source failed while it was
read"; never the store's own words, which would tell a wrong bucket from a closed port.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping

from minio import Minio

from strongroom.adapters.outbound.policy import Outbound, Stage, outbound_for
from strongroom.adapters.outbound.s3 import s3_client
from strongroom.adapters.resolver import Resolver
from strongroom.adapters.sources.archive import ArchiveWriter, ZstdSink
from strongroom.adapters.sources.threaded import ConsumerGoneError, Emit, thread_stream
from strongroom.domain.backups import S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError


def archive_prefix(client: Minio, source: S3Source, emit: Emit, outbound: Outbound) -> None:
    """List every object below the source's prefix and write the archive to ``emit``
    (blocking)."""
    prefix = source.prefix or ""
    with outbound.stage(Stage.SOURCE, SourceError, keep=(ConsumerGoneError,)):
        listing = iter(client.list_objects(source.bucket, prefix=prefix or None, recursive=True))
        first = list(itertools.islice(listing, 1))
    keep = (ConsumerGoneError, SourceError)
    with outbound.stage(Stage.SOURCE_READ, SourceError, keep=keep):
        sink = ZstdSink(emit)
        writer = ArchiveWriter(sink, source.bucket, prefix)
        for item in itertools.chain(first, listing):
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


class S3SourceReader:
    """Reads S3 sources as tar.zst streams (see the module documentation)."""

    def __init__(self, policy: EndpointPolicy | Outbound, resolve: Resolver | None = None) -> None:
        self._outbound = outbound_for(policy, resolve)

    def read(self, source: S3Source, credentials: Mapping[str, str]) -> AsyncIterator[bytes]:
        """The archive of every object below ``source.prefix``."""
        outbound = self._outbound

        def produce(emit: Emit) -> None:
            with outbound.stage(Stage.SOURCE, SourceError):
                client = s3_client(source.endpoint, credentials, outbound)
            archive_prefix(client, source, emit, outbound)

        return thread_stream(produce, "source-s3")
