"""The service's source readers: one per source type, behind the ``SourceReaders`` port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from strongroom.adapters.outbound.policy import Outbound
from strongroom.adapters.resolver import Resolver
from strongroom.domain.backups import PostgresSource, S3Source
from strongroom.domain.endpoints import EndpointPolicy


class Readers:
    """S3 prefixes as tar.zst archives, PostgreSQL databases as ``pg_dump`` custom dumps;
    every connection through the outbound policy (the S3 reader needs the ``s3`` extra, loaded on
    first use)."""

    def __init__(self, policy: EndpointPolicy | Outbound, resolve: Resolver | None = None) -> None:
        self._policy = policy
        self._resolve = resolve

    def read(
        self, source: S3Source | PostgresSource, credentials: Mapping[str, str]
    ) -> AsyncIterator[bytes]:
        """The artifact's stream of ``source``."""
        if isinstance(source, S3Source):
            from strongroom.adapters.sources.s3 import S3SourceReader  # noqa: PLC0415

            return S3SourceReader(self._policy, self._resolve).read(source, credentials)
        from strongroom.adapters.sources.postgres import PostgresSourceReader  # noqa: PLC0415

        return PostgresSourceReader(self._policy, self._resolve).read(source, credentials)
