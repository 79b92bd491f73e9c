"""Webhook subscriptions and their deliveries (contract section 16).

A workspace subscribes a URL to some events; each event becomes one delivery per
subscribed webhook, written in the same transaction as the event (a transactional outbox).
A delivery is attempted until the receiver answers 2xx or 24 hours of backoff have passed;
every attempt is kept for the delivery log. Signing and sending are the adapters' part.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.errors import InvalidRequestError

SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
# Waits before each retry: the first within seconds (a receiver restarting), the rest
# spreading over a day (an outage). Their sum stays under 24 hours.
RETRY_DELAYS: tuple[timedelta, ...] = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=2),
    timedelta(hours=4),
    timedelta(hours=8),
    timedelta(hours=8),
)
# How long a sender holds the deliveries it took (longer than any attempt can take): one
# that dies leaves them due again after it.
DELIVERY_LEASE = timedelta(minutes=2)
MAX_EVENTS_PER_WEBHOOK = 20
MAX_URL_LENGTH = 2000


class WebhookEvent(StrEnum):
    """The events a webhook can subscribe to."""

    RUN_SUCCEEDED = "run.succeeded"
    RUN_FAILED = "run.failed"
    BACKUP_LATE = "backup.late"
    BACKUP_RECOVERED = "backup.recovered"
    ARTIFACT_VERIFICATION_FAILED = "artifact.verification_failed"
    RESTORE_FINISHED = "restore.finished"
    DRILL_FINISHED = "drill.finished"
    # Sent only by ``POST /v1/webhooks/{id}/ping``; never subscribed to.
    PING = "webhook.ping"


def subscribed_events(events: Iterable[str]) -> tuple[WebhookEvent, ...]:
    """The events of a subscription, in catalog order, each once; at least one, and never
    the ping (every webhook receives its own pings)."""
    chosen: set[WebhookEvent] = set()
    for name in events:
        try:
            event = WebhookEvent(name)
        except ValueError:
            event = WebhookEvent.PING
        if event is WebhookEvent.PING:
            raise InvalidRequestError(
                f"events: {name[:100]!r} is not an event; choose from "
                + ", ".join(e.value for e in WebhookEvent if e is not WebhookEvent.PING)
            )
        chosen.add(event)
    if not chosen:
        raise InvalidRequestError("events must name at least one event")
    return tuple(event for event in WebhookEvent if event in chosen)


def check_url(url: str) -> str:
    """An absolute http(s) URL of sensible length (where it may point is the outbound
    endpoint policy's question, asked by the use case)."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or len(url) > MAX_URL_LENGTH:
        raise InvalidRequestError(
            f"url must be an http or https URL of at most {MAX_URL_LENGTH} characters"
        )
    return url


@attrs.frozen
class Webhook:
    """A subscription. Its signing key is kept sealed by the store, never shown again."""

    id: UUID
    workspace_id: UUID
    url: str = attrs.field(converter=check_url)
    events: tuple[WebhookEvent, ...]
    created_at: datetime

    def wants(self, event: WebhookEvent) -> bool:
        """Whether an event is delivered here (pings always are)."""
        return event is WebhookEvent.PING or event in self.events


class DeliveryState(StrEnum):
    """Where a delivery stands."""

    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@attrs.frozen
class Attempt:
    """One try: the receiver's status code (None when nothing answered) and how long it
    took; ``error`` is a fixed phrase of the outbound policy, never the receiver's text."""

    at: datetime
    status_code: int | None
    latency_ms: int
    error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@attrs.frozen
class Delivery:
    """One event on its way to one webhook."""

    id: UUID
    webhook_id: UUID
    workspace_id: UUID
    event: WebhookEvent
    payload: str
    created_at: datetime
    state: DeliveryState = DeliveryState.PENDING
    attempts: tuple[Attempt, ...] = ()
    next_attempt_at: datetime | None = None

    def due(self, now: datetime) -> bool:
        """Whether a sender should try it now."""
        return self.state is DeliveryState.PENDING and (
            self.next_attempt_at is None or self.next_attempt_at <= now
        )

    def attempted(self, attempt: Attempt) -> Delivery:
        """The delivery after ``attempt``: done on a 2xx, otherwise retried after the next
        delay, and failed once the delays are used up."""
        attempts = (*self.attempts, attempt)
        if attempt.succeeded:
            return attrs.evolve(
                self, state=DeliveryState.SUCCEEDED, attempts=attempts, next_attempt_at=None
            )
        retries = len(attempts) - 1
        if retries >= len(RETRY_DELAYS):
            return attrs.evolve(
                self, state=DeliveryState.FAILED, attempts=attempts, next_attempt_at=None
            )
        return attrs.evolve(
            self, attempts=attempts, next_attempt_at=attempt.at + RETRY_DELAYS[retries]
        )

    def redelivered(self, now: datetime) -> Delivery:
        """Queued again at once by a person (its earlier attempts stay in the log)."""
        return attrs.evolve(self, state=DeliveryState.PENDING, next_attempt_at=now)
