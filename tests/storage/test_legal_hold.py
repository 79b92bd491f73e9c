"""Legal hold in storage (contract 15): a held object is removed by nobody, the store's
root credentials included, until released; releasing never shortens its lock."""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
from minio import Minio
from minio.error import S3Error

from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.ports.driven.storage import ObjectLockedError
from support.seaweed import SeaweedServer, s3_storage


def soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def test_a_held_object_on_local_disk_is_kept_until_released(tmp_path: Path) -> None:
    storage = LocalDiskStorage(tmp_path, b"hold")
    key = "ns/b/r/held"
    asyncio.run(storage.put(key, b"abc", hashlib.sha256(b"abc").hexdigest()))
    asyncio.run(storage.hold(key, True))
    with pytest.raises(ObjectLockedError):
        asyncio.run(storage.delete(key))
    asyncio.run(storage.hold(key, False))
    asyncio.run(storage.delete(key))
    assert asyncio.run(storage.stat(key)) is None


def test_root_credentials_cannot_delete_a_held_version_until_released_and_unlocked(
    seaweed: SeaweedServer,
) -> None:
    """Held past its lock, the version stays; released, it stays until its lock passes
    (the release does not shorten it), then the root credentials delete it."""
    storage = s3_storage(seaweed)
    key = "ns/b/r/evidence"
    put = storage.presign_put(key, 4, hashlib.sha256(b"gold").hexdigest(), soon(900))
    assert httpx2.put(put.url, content=b"gold", headers=put.headers).status_code == 200
    locked_until = soon(3)
    asyncio.run(storage.lock(key, locked_until))
    asyncio.run(storage.hold(key, True))
    root = Minio(
        seaweed.endpoint.removeprefix("http://"),
        seaweed.access_key,
        seaweed.secret_key,
        secure=False,
        region="us-east-1",
    )
    version = root.stat_object(storage.bucket, key).version_id
    assert version
    assert root.is_object_legal_hold_enabled(storage.bucket, key, version_id=version)
    time.sleep(max(0.0, (locked_until - datetime.now(UTC)).total_seconds()) + 1.5)
    with pytest.raises(S3Error):
        root.remove_object(storage.bucket, key, version_id=version)
    with pytest.raises(ObjectLockedError):
        asyncio.run(storage.delete(key))
    assert root.get_object(storage.bucket, key, version_id=version).read() == b"gold"
    asyncio.run(storage.hold(key, False))
    assert not root.is_object_legal_hold_enabled(storage.bucket, key, version_id=version)
    root.remove_object(storage.bucket, key, version_id=version)
    assert asyncio.run(storage.stat(key)) is None


def test_a_release_never_shortens_a_lock(seaweed: SeaweedServer) -> None:
    """Released inside its lock, the version is still refused to the root credentials."""
    storage = s3_storage(seaweed)
    key = "ns/b/r/locked"
    put = storage.presign_put(key, 4, hashlib.sha256(b"gold").hexdigest(), soon(900))
    assert httpx2.put(put.url, content=b"gold", headers=put.headers).status_code == 200
    asyncio.run(storage.lock(key, soon(3600)))
    asyncio.run(storage.hold(key, True))
    asyncio.run(storage.hold(key, False))
    root = Minio(
        seaweed.endpoint.removeprefix("http://"),
        seaweed.access_key,
        seaweed.secret_key,
        secure=False,
        region="us-east-1",
    )
    version = root.stat_object(storage.bucket, key).version_id
    with pytest.raises(S3Error):
        root.remove_object(storage.bucket, key, version_id=version)
