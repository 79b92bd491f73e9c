"""Extending an object's lock for a snapshot that references it (contract 14): never
shorter. Kept apart so that each storage adapter's module stays small."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any, Protocol

from minio.commonconfig import COMPLIANCE
from minio.retention import Retention

from strongroom.ports.driven.storage import ObjectLockedError


class _Locking(Protocol):
    async def lock(self, key: str, until: datetime) -> None: ...


class ExtendsLocks:
    """``extend_lock`` for a storage whose ``lock`` refuses (``ObjectLockedError``) only a
    lock shorter than the one it holds: the local disk's lock record."""

    async def extend_lock(self: _Locking, key: str, until: datetime) -> None:
        """The lock at least ``until``; a longer one stays as it is."""
        with contextlib.suppress(ObjectLockedError):
            await self.lock(key, until)


def extend_retention(
    client: Any, bucket: str, key: str, version: str | None, wanted: datetime
) -> None:
    """PutObjectRetention in COMPLIANCE mode on ``version`` until ``wanted``, unless it is
    retained that long already (S3 refuses a shorter one anyway)."""
    with contextlib.suppress(Exception):
        current = client.get_object_retention(bucket, key, version_id=version)
        if current is not None and current.retain_until_date >= wanted:
            return
    client.set_object_retention(bucket, key, Retention(COMPLIANCE, wanted), version_id=version)
