"""The soak's HTTP side: a cluster of instances clients fail over between, a ledger of
what the service acknowledged, and the latency samples of every request."""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx2

# Answers after which a request is repeated on the other instance: the contract says a
# write answered 502/503 was not committed (contract 13).
RETRY_STATUSES = (502, 503)
RETRY_FOR = 60.0  # seconds a retried call keeps trying (an instance restarts within it)
DOWN_FOR = 2.0  # seconds an instance that refused a connection is passed over


@dataclass(frozen=True)
class Sample:
    """One request: what, when it began (monotonic), how long, and how it ended."""

    op: str
    began: float
    seconds: float
    outcome: str  # the status code, or "conn" for a transport error


@dataclass
class Confirmed:
    """A run whose confirm the service acknowledged (200), and what it holds."""

    run_id: str
    artifact_id: str
    seed: int
    size: int
    holder: str  # "manual", or "<worker id>#<attempt>" of the claim that confirmed it
    at: float


@dataclass
class Ledger:
    """Everything acknowledged, and the samples."""

    samples: list[Sample] = field(default_factory=list)
    backups: dict[str, str] = field(default_factory=dict)  # id -> name (201 creates)
    runs: dict[str, str] = field(default_factory=dict)  # id -> how (201 run, 202 trigger)
    workers: dict[str, str] = field(default_factory=dict)  # id -> token (201 creates)
    confirmed: list[Confirmed] = field(default_factory=list)
    # Every claim answered 201: (monotonic time, run id, worker id, attempt).
    claims: list[tuple[float, str, str, int]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # notable events, by name
    read_misses: list[str] = field(default_factory=list)  # acknowledged ids read as 404
    download_mismatches: list[str] = field(default_factory=list)


def payload(seed: int, size: int) -> bytes:
    """The bytes of an artifact, regenerated from its seed for the comparison."""
    return random.Random(seed).randbytes(size)


class Cluster:
    """The instances' URLs; which of them refused a connection lately."""

    def __init__(self, urls: list[str], ledger: Ledger) -> None:
        self.urls = urls
        self.ledger = ledger
        self.down_until = [0.0] * len(urls)
        self.http = httpx2.AsyncClient(
            trust_env=False,
            timeout=httpx2.Timeout(30.0, connect=3.0),
            limits=httpx2.Limits(max_connections=400, max_keepalive_connections=200),
        )

    def pick(self, prefer: int) -> int:
        now = time.monotonic()
        order = [prefer % len(self.urls), (prefer + 1) % len(self.urls)]
        for index in order:
            if self.down_until[index] <= now:
                return index
        return order[0]

    async def close(self) -> None:
        await self.http.aclose()


class Api:
    """One client of the cluster, preferring one instance, failing over to the other."""

    def __init__(self, cluster: Cluster, prefer: int, token: str) -> None:
        self.cluster = cluster
        self.prefer = prefer
        self.token = token

    async def call(
        self,
        op: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        key: str | None = None,
        retry: bool = True,
        timeout: float = 30.0,
        token: str | None = None,
    ) -> httpx2.Response | None:
        """One API call; with ``retry``, repeated (on either instance) after a transport
        error, 502 or 503 for up to ``RETRY_FOR`` seconds. None when no answer came."""
        headers = {"Authorization": f"Bearer {token or self.token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        deadline = time.monotonic() + RETRY_FOR
        pause = 0.1
        cluster, ledger = self.cluster, self.cluster.ledger
        while True:
            index = cluster.pick(self.prefer)
            began = time.monotonic()
            try:
                response = await cluster.http.request(
                    method,
                    cluster.urls[index] + path,
                    json=body,
                    headers=headers,
                    timeout=httpx2.Timeout(timeout, connect=3.0),
                )
            except httpx2.TransportError:
                ledger.samples.append(Sample(op, began, time.monotonic() - began, "conn"))
                cluster.down_until[index] = time.monotonic() + DOWN_FOR
                response = None
            else:
                ledger.samples.append(
                    Sample(op, began, time.monotonic() - began, str(response.status_code))
                )
                if response.status_code not in RETRY_STATUSES:
                    return response
            if not retry or time.monotonic() + pause > deadline:
                return None if response is None else response
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    async def put_object(self, op: str, url: str, headers: dict[str, str], data: bytes) -> bool:
        """A presigned PUT to the object store, repeated after transport errors."""
        for _ in range(5):
            began = time.monotonic()
            try:
                response = await self.cluster.http.put(url, content=data, headers=headers)
            except httpx2.TransportError:
                self.cluster.ledger.samples.append(Sample(op, began, 0.0, "conn"))
                await asyncio.sleep(0.5)
                continue
            self.cluster.ledger.samples.append(
                Sample(op, began, time.monotonic() - began, str(response.status_code))
            )
            return response.status_code == 200
        return False

    async def download_matches(self, artifact_id: str, seed: int, size: int) -> bool | None:
        """Download an artifact through a fresh download URL (up to 5 tries) and compare
        it byte for byte; None when no download answered 200."""
        for _ in range(5):
            answer = await self.call(
                "download-url", "POST", f"/v1/artifacts/{artifact_id}/download-url"
            )
            if answer is None or answer.status_code != 200:
                await asyncio.sleep(0.5)
                continue
            began = time.monotonic()
            try:
                got = await self.cluster.http.get(answer.json()["url"])
            except httpx2.TransportError:
                await asyncio.sleep(0.5)
                continue
            self.cluster.ledger.samples.append(
                Sample("download", began, time.monotonic() - began, str(got.status_code))
            )
            if got.status_code == 200:
                return got.content == payload(seed, size)
            await asyncio.sleep(0.5)
        return None


def new_key() -> str:
    return uuid.uuid4().hex


def announce(name: str, data: bytes) -> dict[str, Any]:
    """The body of ``upload-url`` for ``data``."""
    return {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
