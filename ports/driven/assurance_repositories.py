"""What the assurance use cases need stored (contract 16): the facts a backup's health is
evaluated from with the status last announced, and webhooks with their outbox."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from strongroom.domain.backups import Freshness, Schedule
from strongroom.domain.freshness import Failure, HealthStatus
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.webhooks import Delivery, Webhook, WebhookEvent


@attrs.frozen
class HealthFacts:
    """What one backup's health is evaluated from: its freshness, its schedule (None when
    the scheduler does not run it), its newest success and failure, the status the
    evaluator stored last (None before the first evaluation) and when its admins were last
    mailed about it."""

    backup_id: UUID
    workspace_id: UUID
    name: str
    created_at: datetime
    freshness: Freshness | None
    schedule: Schedule | None
    last_success_at: datetime | None
    last_failure: Failure | None
    stored: HealthStatus | None
    mailed_at: datetime | None


class HealthRepository(Protocol):
    """Backups' health facts and the stored status of each."""

    async def facts(self, workspace_id: UUID | None) -> list[HealthFacts]:
        """Every backup of a workspace (of every workspace: None), in no set order."""
        ...

    async def store(
        self,
        workspace_id: UUID,
        backup_id: UUID,
        expected: HealthStatus | None,
        status: HealthStatus,
        now: datetime,
    ) -> bool:
        """Compare-and-set of the stored status: from ``expected`` (None: nothing stored)
        to ``status``; False when another evaluator moved it first (or the backup went)."""
        ...

    async def mark_mailed(
        self, workspace_id: UUID, backup_id: UUID, now: datetime, not_since: datetime
    ) -> bool:
        """Record a mail about the backup unless one was recorded after ``not_since``;
        whether this call recorded it (the one that sends)."""
        ...

    async def counts(self) -> Mapping[HealthStatus, int]:
        """How many backups of every workspace stand at each stored status."""
        ...


@attrs.frozen
class Subscription:
    """A webhook with its sealed signing secret (for the sender only)."""

    webhook: Webhook
    sealed_secret: bytes = attrs.field(repr=False)


@attrs.frozen
class Outgoing:
    """A due delivery with where it goes and the sealed secret that signs it."""

    delivery: Delivery
    url: str
    sealed_secret: bytes = attrs.field(repr=False)


class WebhookRepository(Protocol):
    """Webhooks of a workspace and their deliveries (the outbox)."""

    async def add(self, subscription: Subscription) -> None:
        """Store a new webhook."""
        ...

    async def get(self, workspace_id: UUID, webhook_id: UUID) -> Webhook | None:
        """A webhook of the workspace."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Webhook]:
        """The workspace's webhooks, newest first."""
        ...

    async def update(self, webhook: Webhook) -> None:
        """Store a webhook's new URL or events."""
        ...

    async def delete(self, workspace_id: UUID, webhook_id: UUID) -> bool:
        """Delete a webhook and its deliveries; whether it existed."""
        ...

    async def subscribed(self, workspace_id: UUID, event: WebhookEvent) -> builtins.list[Webhook]:
        """The workspace's webhooks that want ``event``."""
        ...

    async def add_delivery(self, delivery: Delivery) -> None:
        """Write a delivery into the outbox (in the transaction of the event's cause)."""
        ...

    async def get_delivery(
        self, workspace_id: UUID, webhook_id: UUID, delivery_id: UUID, *, for_update: bool = False
    ) -> Delivery | None:
        """One delivery of a webhook of the workspace."""
        ...

    async def list_deliveries(
        self, workspace_id: UUID, webhook_id: UUID, page: PageRequest
    ) -> Page[Delivery]:
        """A webhook's deliveries, newest first."""
        ...

    async def take_due(self, now: datetime, limit: int) -> builtins.list[Outgoing]:
        """Pending deliveries due at ``now``, oldest first, locked for this transaction
        (skipping those another sender holds)."""
        ...

    async def save_delivery(self, delivery: Delivery) -> None:
        """Store a delivery's new state, attempts and next attempt."""
        ...
