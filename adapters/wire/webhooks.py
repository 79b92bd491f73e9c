"""Webhooks and their deliveries (contract 16)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import webhooks
from strongroom.domain.backups import UNSET, Unset
from strongroom.domain.webhooks import DeliveryState, WebhookEvent

URL_SCHEMA = {
    "format": "uri",
    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]+",
    "maxLength": 2000,
    "examples": ["https://hooks.example.com/strongroom"],
}
EVENTS_SCHEMA = {
    "items": {"enum": [e.value for e in WebhookEvent if e is not WebhookEvent.PING]},
    "minItems": 1,
    "examples": [["run.failed", "backup.late"]],
}
SECRET_SCHEMA = {
    "pattern": "^whsec_(?:[A-Za-z0-9+/]{4}){5,}"
    "(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$",
    "examples": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
}
EVENTS = (
    "Events delivered to the URL: "
    + ", ".join(f"`{e.value}`" for e in WebhookEvent if e is not WebhookEvent.PING)
    + " (pings are always delivered)."
)


@attrs.frozen
class WebhookCreate:
    """`POST /v1/workspaces/{wid}/webhooks`."""

    url: str = attrs.field(
        metadata=meta(
            "An http(s) URL the service may connect to (contract 13's endpoint policy).",
            schema=URL_SCHEMA,
        )
    )
    events: list[str] = attrs.field(metadata=meta(EVENTS, schema=EVENTS_SCHEMA))
    secret: str | None = attrs.field(
        default=None,
        metadata=meta(
            "Optional signing secret (`whsec_` and the base64 of at least 16 bytes); the "
            "service makes one when absent.",
            schema=SECRET_SCHEMA,
        ),
    )


@attrs.frozen
class WebhookUpdate:
    """Every field is optional; the secret never changes."""

    url: str | Unset = attrs.field(default=UNSET, metadata=meta(schema=URL_SCHEMA))
    events: list[str] | Unset = attrs.field(
        default=UNSET, metadata=meta(EVENTS, schema=EVENTS_SCHEMA)
    )


@view_of(webhooks.Webhook)
@attrs.frozen
class Webhook:
    """A webhook; its secret is never shown again after creation."""

    __location__: ClassVar[str] = "/v1/webhooks/{id}"
    # Receivers' URLs often carry a token of their own: never stored by a cache.
    __secret__: ClassVar[bool] = True

    id: UUID
    url: str
    events: list[WebhookEvent]
    created_at: datetime


@attrs.frozen
class WebhookWithSecret(Webhook):
    """A new webhook with its signing secret."""

    secret: str = attrs.field(default="", repr=False)
    """`whsec_` + base64 of the key receivers verify signatures with; shown only here."""


@view_of(webhooks.Attempt)
@attrs.frozen
class Attempt:
    """One try of a delivery."""

    at: datetime
    status_code: int | None
    """The receiver's HTTP status; null when nothing answered."""
    latency_ms: int
    error: str | None
    """Why nothing answered (a fixed phrase), or null."""


@view_of(webhooks.Delivery)
@attrs.frozen
class Delivery:
    """One event on its way to one webhook, with every attempt."""

    id: UUID
    """Also the `webhook-id` header of every attempt (receivers deduplicate by it)."""
    webhook_id: UUID
    event: WebhookEvent
    state: DeliveryState
    created_at: datetime
    next_attempt_at: datetime | None
    attempts: list[Attempt]
    payload: str
    """The body sent (JSON text)."""
