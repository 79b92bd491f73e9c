"""The storage contract: local disk and S3 (SeaweedFS) store, presign, lock and delete
alike, and each refuses to remove a locked object whoever asks.

The port's I/O methods are coroutines; ``run`` drives one to completion (presigning stays
synchronous)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import attrs
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minio import Minio
from minio.commonconfig import COMPLIANCE
from minio.error import S3Error
from minio.retention import Retention

from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.storage.s3 import S3Storage, retain_until_date
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.entrypoints.service import open_storage
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driven.storage import ObjectLockedError, ObjectStorage
from support.seaweed import SeaweedServer, s3_storage

MIB = 1024 * 1024
T = TypeVar("T")
Send = Callable[[str, str, bytes, Mapping[str, str] | None], int]
Fetch = Callable[[str], bytes]


def run(call: Coroutine[Any, Any, T]) -> T:
    """The result of one call of the async storage port, on a fresh event loop."""
    return asyncio.run(call)


class Harness:
    """A storage with a way to send and fetch bytes at its presigned URLs."""

    def __init__(self, storage: ObjectStorage, send: Send, fetch: Fetch) -> None:
        self.storage = storage
        self.send = send
        self.fetch = fetch


def _local(tmp_path: Path) -> Harness:
    storage = LocalDiskStorage(tmp_path / "objects", b"key")

    def send(method: str, url: str, body: bytes, headers: Mapping[str, str] | None = None) -> int:
        parts = urlsplit(url)
        key = parts.path.removeprefix("/storage/")
        grant = storage.verify(method, key, dict(parse_qsl(parts.query)))
        writer = storage.open_writer(grant)
        writer.write(body)
        writer.finish()
        return 200

    def fetch(url: str) -> bytes:
        parts = urlsplit(url)
        key = parts.path.removeprefix("/storage/")
        grant = storage.verify("GET", key, dict(parse_qsl(parts.query)))
        return storage.object_path(grant.key).read_bytes()

    return Harness(storage, send, fetch)


def _s3(seaweed: SeaweedServer) -> Harness:
    def send(method: str, url: str, body: bytes, headers: Mapping[str, str] | None = None) -> int:
        return httpx2.request(method, url, content=body, headers=headers).status_code

    def fetch(url: str) -> bytes:
        response = httpx2.get(url)
        assert response.status_code == 200
        return response.content

    return Harness(s3_storage(seaweed), send, fetch)


@pytest.fixture(params=["local", "s3"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "local":
        yield _local(tmp_path)
    else:
        yield _s3(request.getfixturevalue("seaweed"))


def soon(minutes: int = 15) -> datetime:
    return datetime.now(UTC) + timedelta(minutes=minutes)


class TestStorageContract:
    """What every storage adapter does."""

    def test_a_presigned_put_and_get_round_trip(self, harness: Harness) -> None:
        """The bytes come back; stat knows the size."""
        data = os.urandom(100_000)
        key = "ns/b/r/a1"
        put = harness.storage.presign_put(key, len(data), hashlib.sha256(data).hexdigest(), soon())
        assert harness.send(put.method, put.url, data, put.headers) == 200
        stored = run(harness.storage.stat(key))
        assert stored is not None
        assert stored.size == len(data)
        assert stored.sha256 in (None, hashlib.sha256(data).hexdigest())
        get = run(harness.storage.presign_get(key, soon()))
        assert harness.fetch(get.url) == data
        assert run(harness.storage.stat("ns/b/r/none")) is None

    def test_multipart_parts_are_listed_joined_and_aborted(self, harness: Harness) -> None:
        """Stored parts are listed; complete joins them; an aborted upload is gone."""
        first, second = os.urandom(5 * MIB), os.urandom(1000)
        key = "ns/b/r/big"
        upload = run(harness.storage.start_multipart(key))
        assert run(harness.storage.list_parts(key, upload)) == []
        for number, body in ((1, first), (2, second)):
            part = harness.storage.presign_part(key, upload, number, len(body), soon())
            assert harness.send("PUT", part.url, body, part.headers) == 200
        parts = run(harness.storage.list_parts(key, upload))
        assert parts is not None
        assert [(p.number, p.size) for p in parts] == [(1, len(first)), (2, len(second))]
        assert any(u.upload_id == upload for u in run(harness.storage.pending_uploads(soon())))
        run(harness.storage.complete_multipart(key, upload, parts))
        stored = run(harness.storage.stat(key))
        assert stored is not None
        assert stored.size == len(first) + len(second)
        assert harness.fetch(run(harness.storage.presign_get(key, soon())).url) == first + second
        other = run(harness.storage.start_multipart("ns/b/r/other"))
        run(harness.storage.abort_multipart("ns/b/r/other", other))
        assert run(harness.storage.list_parts("ns/b/r/other", other)) is None

    def test_the_services_own_writes_put_and_upload_parts(self, harness: Harness) -> None:
        """``put`` stores bytes that match their sha256 and refuses others; parts written by
        ``upload_part`` are listed as stored and joined like presigned ones."""
        data = os.urandom(70_000)
        run(harness.storage.put("ns/b/r/own", data, hashlib.sha256(data).hexdigest()))
        assert harness.fetch(run(harness.storage.presign_get("ns/b/r/own", soon())).url) == data
        with pytest.raises(UpstreamUnavailableError):
            run(harness.storage.put("ns/b/r/liar", data, hashlib.sha256(b"other").hexdigest()))
        assert run(harness.storage.stat("ns/b/r/liar")) is None
        first, second = os.urandom(5 * MIB), os.urandom(10)
        key = "ns/b/r/own-parts"
        upload = run(harness.storage.start_multipart(key))
        written = [
            run(harness.storage.upload_part(key, upload, number, body))
            for number, body in ((1, first), (2, second))
        ]
        assert run(harness.storage.list_parts(key, upload)) == written
        run(harness.storage.complete_multipart(key, upload, written))
        assert harness.fetch(run(harness.storage.presign_get(key, soon())).url) == first + second

    def test_read_digest_hashes_the_stored_bytes(self, harness: Harness) -> None:
        """A joined multipart object is re-read whole: its real size and sha256 (in
        chunks: over a MiB here); a missing object is None."""
        data = os.urandom(5 * MIB + 1234)
        key = "ns/b/r/digest"
        upload = run(harness.storage.start_multipart(key))
        for number, body in ((1, data[: 5 * MIB]), (2, data[5 * MIB :])):
            part = harness.storage.presign_part(key, upload, number, len(body), soon())
            assert harness.send("PUT", part.url, body, part.headers) == 200
        parts = run(harness.storage.list_parts(key, upload))
        assert parts is not None
        run(harness.storage.complete_multipart(key, upload, parts))
        run(harness.storage.lock(key, soon(1)))
        found = run(harness.storage.read_digest(key))
        assert found is not None
        assert (found.size, found.sha256) == (len(data), hashlib.sha256(data).hexdigest())
        assert run(harness.storage.read_digest("ns/b/r/never")) is None

    def test_a_locked_object_is_neither_deleted_nor_unlocked_sooner(self, harness: Harness) -> None:
        """Delete and a shorter lock are refused; a longer lock is fine; the bytes stay."""
        key = "ns/b/r/locked"
        put = harness.storage.presign_put(key, 3, hashlib.sha256(b"abc").hexdigest(), soon())
        assert harness.send("PUT", put.url, b"abc", put.headers) == 200
        run(harness.storage.lock(key, soon(60)))
        with pytest.raises(ObjectLockedError):
            run(harness.storage.delete(key))
        with pytest.raises(ObjectLockedError):
            run(harness.storage.lock(key, soon(5)))
        with pytest.raises(ObjectLockedError):
            run(harness.storage.delete_prefix("ns/b"))
        run(harness.storage.lock(key, soon(120)))
        assert run(harness.storage.stat(key)) is not None

    def test_extend_lock_extends_and_never_shortens(self, harness: Harness) -> None:
        """An unlocked object is locked; a longer lock is extended; a shorter request leaves
        the longer lock (no refusal): a shorter ``lock`` is still refused after it."""
        key = "ns/b/r/referenced"
        put = harness.storage.presign_put(key, 3, hashlib.sha256(b"abc").hexdigest(), soon())
        assert harness.send("PUT", put.url, b"abc", put.headers) == 200
        run(harness.storage.extend_lock(key, soon(5)))
        with pytest.raises(ObjectLockedError):
            run(harness.storage.delete(key))
        run(harness.storage.extend_lock(key, soon(60)))
        run(harness.storage.extend_lock(key, soon(10)))
        with pytest.raises(ObjectLockedError):
            run(harness.storage.lock(key, soon(30)))
        assert harness.fetch(run(harness.storage.presign_get(key, soon())).url) == b"abc"

    def test_an_unlocked_object_is_deleted(self, harness: Harness) -> None:
        """Delete removes it (every version)."""
        key = "ns/b/r/free"
        put = harness.storage.presign_put(key, 1, hashlib.sha256(b"x").hexdigest(), soon())
        assert harness.send("PUT", put.url, b"x", put.headers) == 200
        run(harness.storage.delete(key))
        assert run(harness.storage.stat(key)) is None

    def test_delete_many_removes_the_free_and_names_the_locked(self, harness: Harness) -> None:
        """Several objects in one call (every version each): a locked one stays, named with
        ``ObjectLockedError``; one already gone counts as removed."""
        keys = [f"ns/b/r/many-{n}" for n in range(3)]
        for key in keys:
            put = harness.storage.presign_put(key, 1, hashlib.sha256(b"x").hexdigest(), soon())
            assert harness.send("PUT", put.url, b"x", put.headers) == 200
        run(harness.storage.lock(keys[0], soon(60)))
        kept = run(harness.storage.delete_many([*keys, "ns/b/r/never"]))
        assert list(kept) == [keys[0]]
        assert isinstance(kept[keys[0]], ObjectLockedError)
        assert run(harness.storage.stat(keys[0])) is not None
        assert [run(harness.storage.stat(key)) for key in keys[1:]] == [None, None]


class TestS3ObjectLock:
    """The store itself keeps locked versions, even from its own root credentials."""

    def test_root_credentials_cannot_delete_a_locked_version_or_shorten_it(
        self, seaweed: SeaweedServer
    ) -> None:
        """A version-specific DELETE and a shorter COMPLIANCE retention are refused."""
        storage = s3_storage(seaweed)
        key = "ns/b/r/vault"
        put = storage.presign_put(key, 4, hashlib.sha256(b"gold").hexdigest(), soon())
        assert httpx2.put(put.url, content=b"gold", headers=put.headers).status_code == 200
        run(storage.lock(key, soon(60)))
        root = Minio(
            seaweed.endpoint.removeprefix("http://"),
            seaweed.access_key,
            seaweed.secret_key,
            secure=False,
            region="us-east-1",
        )
        version = root.stat_object(storage.bucket, key).version_id
        assert version
        with pytest.raises(S3Error):
            root.remove_object(storage.bucket, key, version_id=version)
        with pytest.raises(S3Error):
            root.set_object_retention(
                storage.bucket, key, Retention(COMPLIANCE, soon(1)), version_id=version
            )
        assert root.get_object(storage.bucket, key, version_id=version).read() == b"gold"

    def test_the_store_keeps_the_lock_until_at_least_locked_until(
        self, seaweed: SeaweedServer
    ) -> None:
        """Contract 13: a lock until a time between two seconds is kept by the store until
        the next whole second, never the one before (stores keep whole seconds)."""
        storage = s3_storage(seaweed)
        key = "ns/b/r/rounded"
        put = storage.presign_put(key, 4, hashlib.sha256(b"gold").hexdigest(), soon())
        assert httpx2.put(put.url, content=b"gold", headers=put.headers).status_code == 200
        until = soon(60).replace(microsecond=900_000)
        run(storage.lock(key, until))
        version = storage.client.stat_object(storage.bucket, key).version_id
        retention = storage.client.get_object_retention(storage.bucket, key, version_id=version)
        assert retention is not None
        assert retention.retain_until_date == until.replace(microsecond=0) + timedelta(seconds=1)

    def test_presigning_makes_no_request(self) -> None:
        """With the region set, presigning works against an address nobody listens on."""
        storage = S3Storage("http://127.0.0.1:9", "a", "b", "bucket")
        url = storage.presign_put("k", 1, "0" * 64, soon()).url
        assert url.startswith("http://127.0.0.1:9/bucket/k?")

    @pytest.mark.parametrize(
        ("method", "key", "query"),
        [
            ("PUT", "ns/b/r/a", None),
            ("GET", "ns/b/r/a b+c", {"versionId": "v1"}),
            ("PUT", "ns/b/r/a", {"uploadId": "up/load=1", "partNumber": "7"}),
        ],
    )
    def test_our_presigned_urls_equal_minios(
        self, method: str, key: str, query: dict[str, str] | None
    ) -> None:
        """The local Signature V4 presigner gives exactly the URL minio computes."""
        storage = S3Storage("http://127.0.0.1:9000", "AKID", "secret/key", "bucket", "eu-west-3")
        moment = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        ours = storage._presigner.url(method, f"/bucket/{key}", 900, query, now=moment)
        minio_url = storage.client.get_presigned_url(
            method,
            "bucket",
            key,
            expires=timedelta(seconds=900),
            request_date=moment,
            extra_query_params=dict(query) if query else None,
        )
        assert dict(parse_qsl(urlsplit(ours).query)) == dict(parse_qsl(urlsplit(minio_url).query))
        assert urlsplit(ours).path == urlsplit(minio_url).path

    def test_an_expired_url_is_refused_by_s3(self, seaweed: SeaweedServer) -> None:
        """A URL presigned for one second, used after two: 403 from the store."""
        storage = s3_storage(seaweed)
        url = storage.presign_put("ns/b/r/late", 1, "0" * 64, datetime.now(UTC)).url
        time.sleep(2.1)
        assert httpx2.put(url, content=b"x").status_code == 403
        assert run(storage.stat("ns/b/r/late")) is None

    def test_a_tampered_or_foreign_url_is_refused_by_s3(self, seaweed: SeaweedServer) -> None:
        """Another key or another signature: 403 from the store."""
        storage = s3_storage(seaweed)
        url = storage.presign_put("ns/b/r/one", 1, "0" * 64, soon()).url
        assert httpx2.put(url.replace("/one?", "/two?"), content=b"x").status_code == 403
        assert httpx2.put(url[:-4] + "0000", content=b"x").status_code == 403
        assert httpx2.get(url).status_code == 403
        assert httpx2.put(url, content=b"xy").status_code == 403  # the signed length is 1


class TestRetainUntilDate:
    """S3 retain-until dates are whole seconds, rounded up (contract 13)."""

    @pytest.mark.parametrize(
        ("until", "expected"),
        [
            (datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),
            (
                datetime(2030, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
                datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC),
            ),
            (
                datetime(2030, 1, 2, 3, 4, 5, 999_999, tzinfo=UTC),
                datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC),
            ),
            (
                datetime(2030, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
                datetime(2031, 1, 1, tzinfo=UTC),
            ),
            (
                datetime(2030, 1, 2, 5, 4, 5, 250_000, tzinfo=timezone(timedelta(hours=2))),
                datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC),
            ),
        ],
    )
    def test_a_fraction_of_a_second_rounds_up(self, until: datetime, expected: datetime) -> None:
        """A whole second stays; any fraction goes to the next second; the result is UTC."""
        rounded = retain_until_date(until)
        assert rounded == expected
        assert rounded.tzinfo is UTC

    @given(st.datetimes(max_value=datetime(9000, 1, 1), timezones=st.just(UTC)))
    def test_never_earlier_and_less_than_a_second_later(self, until: datetime) -> None:
        """The date is a whole second, never before ``until`` and less than a second after."""
        rounded = retain_until_date(until)
        assert rounded.microsecond == 0
        assert until <= rounded < until + timedelta(seconds=1)


class TestConfiguration:
    """Storage is chosen by configuration."""

    def test_local_disk_by_default_and_s3_when_an_endpoint_is_set(
        self, tmp_path: Path, seaweed: SeaweedServer
    ) -> None:
        """No endpoint: local disk under the data dir; an endpoint: S3, bucket created."""
        local = open_storage(Settings(data_dir=tmp_path), "secret")
        assert isinstance(local, LocalDiskStorage)
        assert local.root == tmp_path / "objects"
        bucket = "configured-" + secrets.token_hex(4)
        settings = Settings(
            data_dir=tmp_path,
            s3_endpoint=seaweed.endpoint,
            s3_access_key=seaweed.access_key,
            s3_secret_key=seaweed.secret_key,
            s3_bucket=bucket,
        )
        s3 = open_storage(settings, "secret")
        assert isinstance(s3, S3Storage)
        run(s3.ping())
        with pytest.raises(ValueError, match="STRONGROOM_S3_BUCKET"):
            open_storage(attrs.evolve(settings, s3_bucket=None), "secret")
