"""No port-scan or fingerprint oracle through outbound connections (issue 27, finding 1;
contract 13, added in turn 3).

Every outbound path (s3 and postgres sources, a ``customer_s3`` destination's confirm
and multipart start, s3 and postgres restore targets) is driven against what an attacker
would probe inside the allowed networks: a closed port, an open port that says nothing,
one that answers garbage, an HTTP server, a real server with a wrong database or bucket
(the real PostgreSQL at 127.0.0.1:5432, the session's SeaweedFS), and a name resolving to
the metadata address. Each path answers ONE text for all of them, its stage's fixed
message, naming no address, port or credential, and takes the same time (the budget's
floor) whichever it was.
"""

from __future__ import annotations

import asyncio
import base64
import io
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import cast
from urllib.parse import urlsplit
from uuid import uuid4

import pytest

from strongroom.adapters.outbound.policy import Budget, Outbound, Stage
from strongroom.adapters.outbound.s3 import CustomerBucket
from strongroom.adapters.resolver import system_resolver
from strongroom.adapters.restores.postgres import restore_postgres
from strongroom.adapters.restores.s3 import restore_s3
from strongroom.adapters.sources.postgres import PostgresSourceReader
from strongroom.adapters.sources.s3 import S3SourceReader
from strongroom.adapters.webhooks.sender import WebhookSender
from strongroom.domain.backups import CustomerS3Destination, PostgresSource, S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.domain.webhooks import Attempt as WebhookAttempt
from strongroom.domain.webhooks import Delivery, WebhookEvent
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.sources import SourceError
from strongroom.ports.driving.webhooks import Sendable, Webhooks
from support.seaweed import SeaweedServer

# Small enough for a quick table, large enough for libpq's 2 s minimum connect_timeout.
BUDGET = Budget(resolve=0.5, exchange=2.0, floor=3.0)
# Whatever happens, every failure of one path ends within this of the others.
SPREAD = 1.2
# How many times the slowest case may be probed again before the spread counts.
REPEATS = 4
SECRET = "oracle-secret-" + secrets.token_hex(6)
METADATA_NAME = "metadata.oracle.test"


def resolver(host: str, port: int) -> Sequence[str]:
    """The system's answers, and a name that rebinds to the cloud metadata address."""
    if host == METADATA_NAME:
        return ["169.254.169.254"]
    return system_resolver(host, port)


# Loopback listed (the tests' servers live there), never by weakening the default.
OUTBOUND = Outbound(EndpointPolicy.parse("127.0.0.0/8"), resolver, BUDGET)


class Listener:
    """A TCP server on loopback that accepts and then says ``reply`` (maybe nothing)."""

    def __init__(self, reply: bytes) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.open: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.sock.accept()
            except OSError:
                return
            self.open.append(peer)
            if self.reply:
                try:
                    peer.recv(65536)
                    peer.sendall(self.reply)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()
        for peer in self.open:
            peer.close()


HTTP_404 = (
    b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\n"
    b"Connection: close\r\n\r\nnot found"
)


@pytest.fixture(scope="module")
def places(seaweed: SeaweedServer) -> Iterator[dict[str, tuple[str, int]]]:
    """``case -> (host, port)``; "real" is filled per path (PostgreSQL or SeaweedFS)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    silent, garbage, http = Listener(b""), Listener(b"\x00\xffgarbage\r\n" * 8), Listener(HTTP_404)
    yield {
        "closed port": ("127.0.0.1", closed),
        "silent port": ("127.0.0.1", silent.port),
        "garbage port": ("127.0.0.1", garbage.port),
        "http server": ("127.0.0.1", http.port),
        "metadata name": (METADATA_NAME, 80),
    }
    for listener in (silent, garbage, http):
        listener.close()


CASES = [
    "closed port",
    "silent port",
    "garbage port",
    "http server",
    "real, wrong",
    "metadata name",
]


def s3_endpoint(place: tuple[str, int]) -> str:
    return f"http://{place[0]}:{place[1]}"


def seaweed_place(seaweed: SeaweedServer) -> tuple[str, int]:
    parts = urlsplit(seaweed.endpoint)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


def drain(stream: object) -> None:
    async def consume() -> None:
        async for _ in stream:  # type: ignore[attr-defined]
            pass

    asyncio.run(consume())


def s3_source(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    keys = {"access_key_id": seaweed.access_key, "secret_access_key": SECRET}
    if real:
        keys["secret_access_key"] = seaweed.secret_key
    bucket = "no-such-bucket-" + secrets.token_hex(4) if real else "backups"
    drain(S3SourceReader(OUTBOUND).read(S3Source(s3_endpoint(place), bucket), keys))


def postgres_source(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    source = PostgresSource(place[0], place[1], "no_such_database_" + secrets.token_hex(4))
    keys = {"username": "postgres", "password": SECRET}
    drain(PostgresSourceReader(OUTBOUND).read(source, keys))


def destination(place: tuple[str, int], bucket: str, secret: str) -> CustomerBucket:
    keys = {"access_key_id": "oracle", "secret_access_key": secret}
    return CustomerBucket(CustomerS3Destination(s3_endpoint(place), bucket), keys, OUTBOUND)


def destination_confirm(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    bucket = "no-such-bucket-" + secrets.token_hex(4) if real else "backups"
    storage = destination(place, bucket, SECRET)
    if real:
        storage = CustomerBucket(
            CustomerS3Destination(s3_endpoint(place), bucket),
            {"access_key_id": seaweed.access_key, "secret_access_key": seaweed.secret_key},
            OUTBOUND,
        )
    asyncio.run(storage.stat("ws/run/artifact"))


def destination_multipart(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    # SeaweedFS starts a multipart upload in a bucket that does not exist (AWS answers
    # NoSuchBucket): on the real store the wrong part is the secret.
    asyncio.run(destination(place, "backups", SECRET).start_multipart("ws/run/artifact"))


def s3_target(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    # A missing bucket is created by a restore: the real store's wrong part is the secret.
    keys = {"access_key_id": seaweed.access_key, "secret_access_key": SECRET}
    restore_s3(io.BytesIO(b""), S3Source(s3_endpoint(place), "restored"), keys, OUTBOUND)


def postgres_target(place: tuple[str, int], seaweed: SeaweedServer, real: bool) -> None:
    target = PostgresSource(place[0], place[1], "no_such_database_" + secrets.token_hex(4))
    keys = {"username": "postgres", "password": SECRET}
    restore_postgres(io.BytesIO(b""), target, keys, OUTBOUND)


Attempt = Callable[[tuple[str, int], SeaweedServer, bool], None]
PATHS: dict[str, tuple[Attempt, type[Exception], Stage, bool]] = {
    # name: (attempt, error type, stage, whether the real server is PostgreSQL)
    "s3 source": (s3_source, SourceError, Stage.SOURCE, False),
    "postgres source": (postgres_source, SourceError, Stage.SOURCE, True),
    "customer_s3 confirm": (
        destination_confirm,
        UpstreamUnavailableError,
        Stage.DESTINATION,
        False,
    ),
    "customer_s3 multipart start": (
        destination_multipart,
        UpstreamUnavailableError,
        Stage.DESTINATION,
        False,
    ),
    "s3 restore target": (s3_target, RestoreFailedError, Stage.RESTORE_TARGET, False),
    "postgres restore target": (
        postgres_target,
        RestoreFailedError,
        Stage.RESTORE_TARGET,
        True,
    ),
}


def message_of(error: Exception) -> str:
    text = getattr(error, "message", None)
    return text if isinstance(text, str) else str(error)


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PATHS))
def test_every_way_of_failing_is_one_answer_in_one_time(
    path: str, places: dict[str, tuple[str, int]], seaweed: SeaweedServer
) -> None:
    """One path, every probe: the stage's message, nothing else, at the budget's floor."""
    attempt, error_type, stage, postgres = PATHS[path]
    answers: dict[str, str] = {}

    def probe(case: str) -> float:
        real = case == "real, wrong"
        place = (("127.0.0.1", 5432) if postgres else seaweed_place(seaweed)) if real else None
        started = time.monotonic()
        with pytest.raises(error_type) as failed:
            attempt(place or places[case], seaweed, real)
        answers[case] = message_of(failed.value)
        return time.monotonic() - started

    took = {case: probe(case) for case in CASES}
    # A prober repeats and keeps each case's fastest time: the machine's own scheduling
    # delays (several test processes on two cores) only ever add to a time.
    for _ in range(REPEATS):
        if max(took.values()) - min(took.values()) < SPREAD:
            break
        slowest = max(took, key=took.__getitem__)
        took[slowest] = min(took[slowest], probe(slowest))
    assert set(answers.values()) == {stage.message}, answers
    for case, seconds in took.items():
        assert seconds >= BUDGET.floor - 0.05, (case, took)
    assert max(took.values()) - min(took.values()) < SPREAD, took
    for text in answers.values():
        assert SECRET not in text
        assert "127.0.0.1" not in text
        assert "169.254" not in text
        assert "5432" not in text


def test_a_customer_bucket_still_tells_a_missing_object(seaweed: SeaweedServer) -> None:
    """The real store with the right bucket: a missing object is ``None`` (409
    ``artifact_missing`` upstream), a present one has its size; no floor is waited."""
    bucket = "oracle-" + secrets.token_hex(4)
    keys = {"access_key_id": seaweed.access_key, "secret_access_key": seaweed.secret_key}
    storage = CustomerBucket(CustomerS3Destination(seaweed.endpoint, bucket), keys, OUTBOUND)
    storage.client.make_bucket(bucket)
    started = time.monotonic()
    assert asyncio.run(storage.stat("absent")) is None
    storage.client.put_object(bucket, "present", io.BytesIO(b"12345"), 5)
    stored = asyncio.run(storage.stat("present"))
    assert stored is not None
    assert stored.size == 5
    assert time.monotonic() - started < BUDGET.floor


@pytest.mark.slow
def test_a_webhook_that_nothing_answers_is_one_answer_in_one_time(
    places: dict[str, tuple[str, int]],
) -> None:
    """Webhooks (contract 13: "sources, destinations, restore targets, webhooks"): a
    closed, silent, garbage-answering or disallowed receiver is recorded as the same
    attempt, no status and the webhook stage's message, at the budget's floor. An HTTP
    server's own status is recorded as it is: that is what a webhook reports."""
    sender = WebhookSender(cast(Webhooks, None), OUTBOUND, lambda: datetime.now(UTC))
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()

    def attempt(place: tuple[str, int]) -> tuple[WebhookAttempt, float]:
        delivery = Delivery(
            uuid4(), uuid4(), uuid4(), WebhookEvent.RUN_FAILED, "{}", datetime.now(UTC)
        )
        url = f"http://{place[0]}:{place[1]}/hook?token={SECRET}"
        started = time.monotonic()
        made = sender.attempt(Sendable(delivery, url, secret))
        return made, time.monotonic() - started

    try:
        unreachable = ["closed port", "silent port", "garbage port", "metadata name"]
        made = {case: attempt(places[case]) for case in unreachable}
        answered, _ = attempt(places["http server"])
    finally:
        sender.close()
    assert {(a.status_code, a.error) for a, _ in made.values()} == {(None, Stage.WEBHOOK.message)}
    took = {case: seconds for case, (_, seconds) in made.items()}
    assert min(took.values()) >= BUDGET.floor - 0.05, took
    assert max(took.values()) - min(took.values()) < SPREAD, took
    assert (answered.status_code, answered.error) == (404, None)
