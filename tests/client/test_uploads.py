"""Sending to presigned URLs: only the missing parts, each with its exact bytes; retries
of transient failures; expired URLs asked for again; a refusal stops the upload.

Storage is played by an ``httpx2.MockTransport`` that records what arrives (the real
storages are exercised end to end in tests/integration/test_client_transfers.py)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from uuid import UUID, uuid4

import attrs
import httpx2
import pytest

from strongroom.client.uploads import (
    Prepared,
    Sender,
    UploadCancelledError,
    UploadError,
    hash_file,
)

PART = 1000


@attrs.frozen
class Part:
    number: int
    size: int
    url: str


@attrs.frozen
class Multipart:
    artifact_id: UUID
    upload_id: str
    part_size: int
    parts: list[Part]
    stored_parts: list[int]


@attrs.frozen
class Single:
    artifact_id: UUID
    url: str
    headers: dict[str, str]


class Storage:
    """Records the PUTs; ``answer(number, attempt)`` decides each status."""

    def __init__(self, answer: Callable[[int, int], int] = lambda number, attempt: 200) -> None:
        self.received: dict[int, bytes] = {}
        self.attempts: dict[int, int] = {}
        self._answer = answer
        self._lock = threading.Lock()

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        number = int(request.url.params.get("part", "0"))
        body = request.read()
        with self._lock:
            attempt = self.attempts[number] = self.attempts.get(number, 0) + 1
        status = self._answer(number, attempt)
        if status == 200:
            with self._lock:
                self.received[number] = body
        return httpx2.Response(status, text="refused" if status != 200 else "")


def prepared_file(tmp_path: Path, size: int) -> Prepared:
    path = tmp_path / "data"
    path.write_bytes(os.urandom(size))
    length, digest = hash_file(path)
    return Prepared(path, "data", length, digest)


def plan_for(size: int, stored: list[int], generation: int = 0) -> Multipart:
    count = -(-size // PART)
    parts = [
        Part(
            n,
            PART if n < count else size - PART * (count - 1),
            f"http://store/o?part={n}&g={generation}",
        )
        for n in range(1, count + 1)
    ]
    return Multipart(uuid4(), "upload-1", PART, parts, stored)


def sender(storage: Storage, **options: object) -> Sender:
    transport = httpx2.Client(transport=httpx2.MockTransport(storage.handle))
    return Sender(transport, parallel=3, retry_delay=0.0, **options)  # type: ignore[arg-type]


class TestSender:
    """What ``Sender.send`` puts into storage."""

    def test_only_the_missing_parts_go_and_each_holds_its_bytes(self, tmp_path: Path) -> None:
        ready = prepared_file(tmp_path, 4500)
        storage = Storage()
        done: list[int] = []
        report = sender(storage, on_part=done.append).send(
            ready, lambda: plan_for(ready.size, [1, 3])
        )
        assert sorted(storage.received) == [2, 4, 5]
        data = ready.path.read_bytes()
        for number, body in storage.received.items():
            assert body == data[(number - 1) * PART : number * PART]
        assert (report.parts_sent, report.parts_skipped) == (3, 2)
        assert sorted(done) == [2, 4, 5]

    def test_transient_failures_are_retried(self, tmp_path: Path) -> None:
        ready = prepared_file(tmp_path, 2500)
        storage = Storage(lambda number, attempt: 503 if attempt < 3 else 200)
        report = sender(storage).send(ready, lambda: plan_for(ready.size, []))
        assert report.parts_sent == 3
        assert storage.attempts == {1: 3, 2: 3, 3: 3}

    def test_expired_urls_are_asked_for_again(self, tmp_path: Path) -> None:
        """A 403 (URLs past their 15 minutes): a new plan, and only what is still missing."""
        ready = prepared_file(tmp_path, 3000)
        storage = Storage(lambda number, attempt: 403 if (number, attempt) == (2, 1) else 200)
        asked: list[int] = []

        def ask() -> Multipart:
            asked.append(1)
            return plan_for(ready.size, sorted(storage.received), len(asked))

        report = sender(storage).send(ready, ask)
        assert len(asked) == 2
        assert sorted(storage.received) == [1, 2, 3]
        assert storage.attempts[2] == 2
        assert report.parts_sent + report.parts_skipped == 3

    def test_a_refusal_is_an_upload_error(self, tmp_path: Path) -> None:
        ready = prepared_file(tmp_path, 500)
        storage = Storage(lambda number, attempt: 400)
        with pytest.raises(UploadError, match="refused the upload \\(400\\)"):
            sender(storage).send(
                ready,
                lambda: Single(uuid4(), "http://store/o?part=0", {"x-amz-checksum-sha256": "c"}),
            )
        assert storage.attempts == {0: 1}

    def test_a_single_upload_carries_the_plans_headers(self, tmp_path: Path) -> None:
        ready = prepared_file(tmp_path, 700)
        seen: list[httpx2.Request] = []

        def handle(request: httpx2.Request) -> httpx2.Response:
            request.read()
            seen.append(request)
            return httpx2.Response(200)

        transport = httpx2.Client(transport=httpx2.MockTransport(handle))
        Sender(transport).send(ready, lambda: Single(uuid4(), "http://store/o", {"x-check": "abc"}))
        (request,) = seen
        assert request.headers["x-check"] == "abc"
        assert request.headers["content-length"] == "700"
        assert hashlib.sha256(request.content).hexdigest() == ready.sha256

    def test_a_stop_ends_the_upload(self, tmp_path: Path) -> None:
        ready = prepared_file(tmp_path, 3000)
        stop = threading.Event()
        stop.set()
        storage = Storage()
        with pytest.raises(UploadCancelledError):
            sender(storage, stop=stop).send(ready, lambda: plan_for(ready.size, []))
        assert storage.received == {}
