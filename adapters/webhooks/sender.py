"""The outbox's sender: due deliveries are POSTed with Standard Webhooks headers through
the outbound policy's HTTP client, and every attempt (status, latency, the fixed phrase of
a failure) is recorded by ``Webhooks.record``, which schedules the retry.

The API never waits for a receiver: the sender runs in ``serve`` as a loop of its own, its
blocking exchanges on a thread pool of its own (``concurrency`` at once), each bounded by
the policy's budget. A receiver that never answers holds one of those threads for the
budget, never a request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import urllib3

from strongroom.adapters.outbound.http import outbound_http
from strongroom.adapters.outbound.policy import Outbound, Stage
from strongroom.adapters.webhooks.signing import signed_headers
from strongroom.domain.webhooks import Attempt
from strongroom.ports.driving.webhooks import Sendable, Webhooks

logger = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 8
USER_AGENT = "Strongroom-Webhooks/1"


class _UnreachableError(Exception):
    """The stage's fixed message (raised by ``Outbound.stage``)."""


class WebhookSender:
    """Sends the due deliveries of ``webhooks``; any number of senders may share a
    database (each delivery is leased to one at a time)."""

    def __init__(
        self,
        webhooks: Webhooks,
        outbound: Outbound,
        clock: Callable[[], datetime],
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self._webhooks = webhooks
        self._outbound = outbound
        self._clock = clock
        self._concurrency = concurrency
        self._http = outbound_http(outbound, maxsize=concurrency)
        self._threads = ThreadPoolExecutor(concurrency, thread_name_prefix="webhooks")

    async def send_due(self) -> int:
        """Take a batch of due deliveries and attempt each, ``concurrency`` at once; how
        many were attempted."""
        due = await self._webhooks.take_due()
        if not due:
            return 0
        slots = asyncio.Semaphore(self._concurrency)

        async def one(item: Sendable) -> None:
            async with slots:
                loop = asyncio.get_running_loop()
                attempt = await loop.run_in_executor(self._threads, self.attempt, item)
            await self._webhooks.record(item.delivery, attempt)

        await asyncio.gather(*(one(item) for item in due))
        return len(due)

    def attempt(self, item: Sendable) -> Attempt:
        """One POST of the delivery (blocking): the receiver's status, or the fixed
        message of the outbound stage when nothing answered."""
        at = self._clock()
        body = item.delivery.payload
        # Signed at the wall clock's time of sending: what a receiver's tolerance checks.
        sent = datetime.now(UTC)
        headers = signed_headers(item.secret, str(item.delivery.id), sent, body)
        headers |= {"content-type": "application/json", "user-agent": USER_AGENT}
        started = time.monotonic()
        try:
            with self._outbound.stage(Stage.WEBHOOK, _UnreachableError):
                response = self._http.request(
                    "POST",
                    item.url,
                    body=body.encode(),
                    headers=headers,
                    redirect=False,
                    retries=urllib3.Retry(total=0, redirect=0, raise_on_status=False),
                    preload_content=False,
                )
                response.drain_conn()
                response.release_conn()
        except _UnreachableError as failure:
            latency = int((time.monotonic() - started) * 1000)
            return Attempt(at, None, latency, str(failure))
        latency = int((time.monotonic() - started) * 1000)
        return Attempt(at, response.status, latency)

    def close(self) -> None:
        """Stop the threads (attempts in flight finish within the budget)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._http.clear()
