"""Webhooks, their delivery log, redelivery and pings (contract 16)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.webkit.declared import IfMatch
from strongroom.adapters.wire import present
from strongroom.adapters.wire.webhooks import (
    Delivery,
    Webhook,
    WebhookCreate,
    WebhookUpdate,
    WebhookWithSecret,
)
from strongroom.domain.backups import UNSET
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.webhooks import Delivery as DomainDelivery
from strongroom.domain.webhooks import Webhook as DomainWebhook
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.webhooks import (
    CREATE_WEBHOOK,
    DELETE_WEBHOOK,
    PING_WEBHOOK,
    READ_WEBHOOKS,
    REDELIVER_WEBHOOK,
    UPDATE_WEBHOOK,
)

routes = Routes("Webhooks")


@routes.post(
    "/v1/workspaces/{wid}/webhooks",
    WebhookWithSecret,
    "The new webhook with its signing secret.",
    CREATE_WEBHOOK,
    status=201,
    billing="config",
    located="/v1/webhooks/{id}",
)
async def create_webhook(facade: Strongroom, grant: Grant, wid: UUID, body: WebhookCreate) -> Any:
    """Create a webhook

    Deliveries of the chosen events to `url`, signed like Standard Webhooks
    (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA-256>`),
    retried with backoff for 24 hours. The secret appears only in this answer. Needs
    `workspaces:write`.

    Errors:
    - `invalid_request`: `url` is not an http(s) URL, `events` is empty or names an unknown
      event, `secret` is not `whsec_` and the base64 of at least 16 bytes
    - `validation_failed`: `url` names an address the service does not connect to"""
    created = await facade.webhooks.create(grant, wid, body.url, body.events, body.secret)
    return present(created.webhook, WebhookWithSecret, secret=created.secret)


@routes.get("/v1/workspaces/{wid}/webhooks", Paged(Webhook), "One page of webhooks.", READ_WEBHOOKS)
async def list_webhooks(
    facade: Strongroom, grant: Grant, wid: UUID, page: PageRequest
) -> Page[DomainWebhook]:
    """List webhooks

    The workspace's webhooks, newest first (never their secrets). Needs `workspaces:read`."""
    return await facade.webhooks.list(grant, wid, page)


@routes.get("/v1/webhooks/{id}", Webhook, "The webhook.", READ_WEBHOOKS)
async def get_webhook(facade: Strongroom, grant: Grant, id: UUID) -> DomainWebhook:
    """Read a webhook

    One webhook of the caller's workspace. Needs `workspaces:read`."""
    return await facade.webhooks.get(grant, id)


@routes.patch("/v1/webhooks/{id}", Webhook, "The updated webhook.", UPDATE_WEBHOOK)
async def update_webhook(
    facade: Strongroom, grant: Grant, id: UUID, body: WebhookUpdate, precondition: IfMatch
) -> DomainWebhook:
    """Change a webhook

    A new URL or new events; the secret stays. Needs `workspaces:write`.

    Errors:
    - `invalid_request`: `url` is not an http(s) URL, `events` is empty or names an unknown
      event
    - `validation_failed`: `url` names an address the service does not connect to"""
    return await facade.webhooks.update(
        grant,
        id,
        None if body.url is UNSET else body.url,
        None if body.events is UNSET else body.events,
        precondition=precondition,
    )


@routes.delete("/v1/webhooks/{id}", "Deleted.", DELETE_WEBHOOK, empty_body=True)
async def delete_webhook(facade: Strongroom, grant: Grant, id: UUID) -> None:
    """Delete a webhook

    Nothing more is sent to it; its delivery log goes with it. Needs `workspaces:write`."""
    await facade.webhooks.delete(grant, id)


@routes.get(
    "/v1/webhooks/{id}/deliveries", Paged(Delivery), "One page of deliveries.", READ_WEBHOOKS
)
async def list_deliveries(
    facade: Strongroom, grant: Grant, id: UUID, page: PageRequest
) -> Page[DomainDelivery]:
    """Delivery log

    The webhook's deliveries, newest first, each with every attempt (status code and
    latency). Needs `workspaces:read`."""
    return await facade.webhooks.deliveries(grant, id, page)


@routes.action(
    "/v1/webhooks/{id}/deliveries/{did}/redeliver",
    Delivery,
    "The delivery, queued again.",
    REDELIVER_WEBHOOK,
)
async def redeliver(facade: Strongroom, grant: Grant, id: UUID, did: UUID) -> DomainDelivery:
    """Redeliver

    Queue a delivery again at once; its earlier attempts stay in the log. Needs
    `workspaces:write`."""
    return await facade.webhooks.redeliver(grant, id, did)


@routes.action("/v1/webhooks/{id}/ping", Delivery, "The queued ping.", PING_WEBHOOK)
async def ping_webhook(facade: Strongroom, grant: Grant, id: UUID) -> DomainDelivery:
    """Ping a webhook

    Queue a `webhook.ping` event to the webhook's URL (every webhook receives pings). Needs
    `workspaces:write`."""
    return await facade.webhooks.ping(grant, id)
