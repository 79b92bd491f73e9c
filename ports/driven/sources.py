"""The source port: what the service's executors read cloud backups from (contract 11).

A reader turns a backup's source (an S3 prefix, a PostgreSQL database) and its opened
credentials into one stream of bytes, the artifact, read chunk by chunk in constant
memory. Readers connect only where the outbound endpoint policy allows (contract 13).
Every failure is a ``SourceError`` whose message is safe to show as a run's ``error``:
it names what failed and why in the source's own terms, never a credential.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Protocol

from strongroom.domain.backups import PostgresSource, S3Source


class SourceError(Exception):
    """Reading a source failed; the message holds no secret (it becomes a run's error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SourceReaders(Protocol):
    """Opens the streams of cloud backup sources."""

    def read(
        self, source: S3Source | PostgresSource, credentials: Mapping[str, str]
    ) -> AsyncIterator[bytes]:
        """The artifact's bytes, in chunks, until the source is read completely; raises
        ``SourceError`` on failure. Closing the iterator early (``aclose``, a cancelled
        task) stops the reading and releases what it holds (connections, processes)."""
        ...
