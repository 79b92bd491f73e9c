"""Webhooks (contract 16): a workspace's subscriptions, their delivery log, redelivery and
pings; and the service's side of the outbox (``take_due``, ``record``), which a sender
loop of ``serve`` drives with the outbound HTTP client.

The signing secret is shown once, in the create answer, and kept sealed by the secret box.
A URL naming a literal address the endpoint policy refuses is refused (422); a name is
judged after each resolution, when a delivery is attempted.
"""

from __future__ import annotations

import base64
import binascii
import builtins
from collections.abc import Sequence
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import Change
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.webhooks import (
    SECRET_PREFIX,
    Attempt,
    Delivery,
    DeliveryState,
    Webhook,
    WebhookEvent,
    check_url,
    subscribed_events,
)
from strongroom.ports.driven.assurance_repositories import Subscription
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import payload
from strongroom.ports.driving.preconditions import Precondition, check_precondition

READ_WEBHOOKS = Requirement((Permission.WORKSPACES_READ,))
CREATE_WEBHOOK = Requirement((Permission.WORKSPACES_WRITE,), "webhook.create")
UPDATE_WEBHOOK = Requirement((Permission.WORKSPACES_WRITE,), "webhook.update")
DELETE_WEBHOOK = Requirement((Permission.WORKSPACES_WRITE,), "webhook.delete")
REDELIVER_WEBHOOK = Requirement((Permission.WORKSPACES_WRITE,), "webhook.redeliver")
PING_WEBHOOK = Requirement((Permission.WORKSPACES_WRITE,), "webhook.ping")
SECRET_BYTES = 24
MIN_SECRET_BYTES = 16
# Deliveries one call of the sender takes at most.
BATCH = 50


@attrs.frozen
class CreatedWebhook:
    """A new webhook with its signing secret (shown in this answer only)."""

    webhook: Webhook
    secret: str = attrs.field(repr=False)


@attrs.frozen
class Sendable:
    """A due delivery, where it goes and the secret that signs it (the sender's)."""

    delivery: Delivery
    url: str
    secret: str = attrs.field(repr=False)


def check_secret(secret: str) -> str:
    """A secret the person chose: ``whsec_`` and the base64 of at least 16 bytes."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not secret.startswith(SECRET_PREFIX) or len(key) < MIN_SECRET_BYTES:
        raise InvalidRequestError(
            f"secret must be {SECRET_PREFIX!r} followed by the base64 of at least "
            f"{MIN_SECRET_BYTES} bytes"
        )
    return secret


class Webhooks:
    """Webhook subscriptions and the outbox."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    def _checked_url(self, url: str) -> str:
        self._deps.endpoint_policy.check_endpoint(check_url(url), "url")
        return url

    async def create(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        url: str,
        events: Sequence[str],
        secret: str | None = None,
    ) -> CreatedWebhook:
        """Subscribe ``url`` to ``events`` in the workspace."""
        caller, workspace_id = await self._access.resolve(
            caller, CREATE_WEBHOOK, workspace_id=workspace_id
        )
        chosen = subscribed_events(events)
        url = self._checked_url(url)
        if secret is None:
            key = self._deps.ids.random_bytes(SECRET_BYTES)
            secret = SECRET_PREFIX + base64.b64encode(key).decode()
        else:
            secret = check_secret(secret)
        now = self._deps.clock.now()
        webhook = Webhook(self._deps.ids.new_id(), workspace_id, url, chosen, now)
        sealed = self._deps.secrets.seal({"secret": secret})
        async with changing(self._deps, caller, workspace_id) as change:
            await change.gate()
            await change.uow.webhooks.add(Subscription(webhook, sealed))
            await change.record(
                "webhook.create",
                webhook.id,
                {"url": Change(None, url), "events": Change(None, [e.value for e in chosen])},
            )
        return CreatedWebhook(webhook, secret)

    async def list(
        self, caller: Caller | Grant, workspace_id: UUID, page: PageRequest
    ) -> Page[Webhook]:
        """The workspace's webhooks, newest first (never their secrets)."""
        await self._access.resolve(caller, READ_WEBHOOKS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.webhooks.list(workspace_id, page)

    async def get(self, caller: Caller | Grant, webhook_id: UUID) -> Webhook:
        """One webhook of the caller's workspace."""
        _caller, workspace_id = await self._access.resolve(caller, READ_WEBHOOKS)
        async with self._deps.uow() as uow:
            return lookups.existing(await uow.webhooks.get(workspace_id, webhook_id), "webhook")

    async def update(
        self,
        caller: Caller | Grant,
        webhook_id: UUID,
        url: str | None = None,
        events: Sequence[str] | None = None,
        precondition: Precondition[Webhook] | None = None,
    ) -> Webhook:
        """Change a webhook's URL or events (its secret stays); ``precondition``: as
        ``Backups.update``."""
        caller, workspace_id = await self._access.resolve(
            caller, UPDATE_WEBHOOK, target_id=webhook_id
        )
        chosen = None if events is None else subscribed_events(events)
        checked = None if url is None else self._checked_url(url)
        async with changing(self._deps, caller, workspace_id) as change:
            await change.gate()
            found = await change.uow.webhooks.get(workspace_id, webhook_id)
            webhook = lookups.existing(found, "webhook")
            check_precondition(precondition, webhook, "webhook")
            after = attrs.evolve(
                webhook,
                url=webhook.url if checked is None else checked,
                events=webhook.events if chosen is None else chosen,
            )
            changes = {}
            if after.url != webhook.url:
                changes["url"] = Change(webhook.url, after.url)
            if after.events != webhook.events:
                changes["events"] = Change(
                    [e.value for e in webhook.events], [e.value for e in after.events]
                )
            await change.uow.webhooks.update(after)
            await change.record("webhook.update", webhook_id, changes)
        return after

    async def delete(self, caller: Caller | Grant, webhook_id: UUID) -> None:
        """Delete a webhook and its delivery log; nothing more is sent to it."""
        caller, workspace_id = await self._access.resolve(
            caller, DELETE_WEBHOOK, target_id=webhook_id
        )
        async with changing(self._deps, caller, workspace_id) as change:
            if not await change.uow.webhooks.delete(workspace_id, webhook_id):
                lookups.existing(None, "webhook")
            await change.record("webhook.delete", webhook_id)

    async def deliveries(
        self, caller: Caller | Grant, webhook_id: UUID, page: PageRequest
    ) -> Page[Delivery]:
        """A webhook's deliveries with their attempts, newest first."""
        _caller, workspace_id = await self._access.resolve(caller, READ_WEBHOOKS)
        async with self._deps.uow() as uow:
            lookups.existing(await uow.webhooks.get(workspace_id, webhook_id), "webhook")
            return await uow.webhooks.list_deliveries(workspace_id, webhook_id, page)

    async def redeliver(
        self, caller: Caller | Grant, webhook_id: UUID, delivery_id: UUID
    ) -> Delivery:
        """Queue a delivery again at once (its attempts stay in the log)."""
        caller, workspace_id = await self._access.resolve(
            caller, REDELIVER_WEBHOOK, target_id=webhook_id
        )
        now = self._deps.clock.now()
        async with changing(self._deps, caller, workspace_id) as change:
            found = await change.uow.webhooks.get_delivery(
                workspace_id, webhook_id, delivery_id, for_update=True
            )
            again = lookups.existing(found, "delivery").redelivered(now)
            await change.uow.webhooks.save_delivery(again)
            await change.record(
                "webhook.redeliver", webhook_id, {"delivery_id": Change(None, str(delivery_id))}
            )
        return again

    async def ping(self, caller: Caller | Grant, webhook_id: UUID) -> Delivery:
        """Queue a ``webhook.ping`` to the webhook (a test of its receiver)."""
        caller, workspace_id = await self._access.resolve(
            caller, PING_WEBHOOK, target_id=webhook_id
        )
        now = self._deps.clock.now()
        async with changing(self._deps, caller, workspace_id) as change:
            webhook = lookups.existing(
                await change.uow.webhooks.get(workspace_id, webhook_id), "webhook"
            )
            body = payload(WebhookEvent.PING, now, {"webhook_id": str(webhook.id)})
            delivery = Delivery(
                self._deps.ids.new_id(),
                webhook.id,
                workspace_id,
                WebhookEvent.PING,
                body,
                now,
                next_attempt_at=now,
            )
            await change.uow.webhooks.add_delivery(delivery)
            await change.record("webhook.ping", webhook_id)
        return delivery

    # ----------------------------------------------------------------------------------
    # The service's side: the sender takes due deliveries and records each attempt.

    async def take_due(self, limit: int = BATCH) -> builtins.list[Sendable]:
        """Due deliveries, leased to this sender (another sender skips them)."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            taken = await uow.webhooks.take_due(now, limit)
            await uow.commit()
        return [
            Sendable(item.delivery, item.url, self._deps.secrets.open(item.sealed_secret)["secret"])
            for item in taken
        ]

    async def record(self, delivery: Delivery, attempt: Attempt) -> Delivery | None:
        """Record an attempt: done on a 2xx, else due again after the next retry delay;
        None when the delivery or its webhook went meanwhile."""
        async with self._deps.uow() as uow:
            current = await uow.webhooks.get_delivery(
                delivery.workspace_id, delivery.webhook_id, delivery.id, for_update=True
            )
            if current is None:
                return None
            if current.state is not DeliveryState.PENDING:
                return current
            after = current.attempted(attempt)
            await uow.webhooks.save_delivery(after)
            await uow.commit()
        return after
