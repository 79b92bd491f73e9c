"""Cloud runs executed by the service itself (contract 11): what their artifact is called.

A cloud run delivers one artifact: an S3 source's objects as a tar.zst archive, a
PostgreSQL source's ``pg_dump`` custom-format dump. Its name is the backup's name (made
safe for file names) and the run's creation time, so every attempt of one run writes the
same name (a requeued attempt takes over its predecessor's pending record) and the names
of a backup's runs sort by time.
"""

from __future__ import annotations

import re

from strongroom.domain.backups import Backup, PostgresSource, S3Source
from strongroom.domain.errors import InvalidStateError
from strongroom.domain.runs import Run

SUFFIXES = {"s3": ".tar.zst", "postgres": ".pgdump"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cloud_source(backup: Backup) -> S3Source | PostgresSource:
    """The source a cloud run reads; ``invalid_state`` when the backup has none usable."""
    source = backup.source
    if not isinstance(source, S3Source | PostgresSource) or backup.sealed_credentials is None:
        raise InvalidStateError("the backup has no source with credentials to read")
    return source


def artifact_name(backup: Backup, run: Run) -> str:
    """``<backup name>-<run created, UTC, basic ISO 8601>`` and the source's suffix, e.g.
    ``nightly-db-20300102T120000Z.pgdump``; a name with nothing file-safe in it gives way
    to the backup's id."""
    stem = _UNSAFE.sub("-", backup.name).strip("-.")[:100] or str(backup.id)
    stamp = run.created_at.strftime("%Y%m%dT%H%M%SZ")
    return f"{stem}-{stamp}{SUFFIXES[cloud_source(backup).type]}"
