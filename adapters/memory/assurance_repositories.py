"""In-memory health records and webhooks with their outbox."""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, require
from strongroom.domain.backups import Backup
from strongroom.domain.freshness import Failure, HealthStatus
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.runs import Run, RunState
from strongroom.domain.webhooks import DELIVERY_LEASE, Delivery, Webhook, WebhookEvent
from strongroom.ports.driven.assurance_repositories import HealthFacts, Outgoing, Subscription


@attrs.frozen
class _Stored:
    workspace_id: UUID
    status: HealthStatus
    changed_at: datetime
    mailed_at: datetime | None = None


class MemoryHealthRepository(MemoryRepository):
    """Health facts from the backups and runs tables; the stored status per backup."""

    table = "backup_health"

    async def facts(self, workspace_id: UUID | None) -> list[HealthFacts]:
        backups: list[Backup] = [
            backup
            for backup in self._tx.read("backups").values()
            if workspace_id is None or backup.workspace_id == workspace_id
        ]
        wanted = {backup.id for backup in backups}
        successes: dict[UUID, datetime] = {}
        failures: dict[UUID, Run] = {}
        for run in self._tx.read("runs").values():
            if run.backup_id not in wanted or run.finished_at is None:
                continue
            if run.state is RunState.SUCCEEDED:
                known = successes.get(run.backup_id)
                if known is None or run.finished_at > known:
                    successes[run.backup_id] = run.finished_at
            elif run.state is RunState.FAILED:
                newest = failures.get(run.backup_id)
                if newest is None or (run.finished_at, run.id) > (newest.finished_at, newest.id):
                    failures[run.backup_id] = run
        stored: Mapping[UUID, _Stored] = self._tx.read(self.table)
        found = []
        for backup in backups:
            failed = failures.get(backup.id)
            record = stored.get(backup.id)
            found.append(
                HealthFacts(
                    backup_id=backup.id,
                    workspace_id=backup.workspace_id,
                    name=backup.name,
                    created_at=backup.created_at,
                    freshness=backup.freshness,
                    schedule=backup.schedule if backup.is_scheduled else None,
                    last_success_at=successes.get(backup.id),
                    last_failure=None
                    if failed is None or failed.finished_at is None
                    else Failure(failed.id, failed.error, failed.finished_at),
                    stored=None if record is None else record.status,
                    mailed_at=None if record is None else record.mailed_at,
                )
            )
        return found

    def _backup_exists(self, workspace_id: UUID, backup_id: UUID) -> bool:
        backup: Backup | None = self._tx.read("backups").get(backup_id)
        return backup is not None and backup.workspace_id == workspace_id

    async def store(
        self,
        workspace_id: UUID,
        backup_id: UUID,
        expected: HealthStatus | None,
        status: HealthStatus,
        now: datetime,
    ) -> bool:
        if not self._backup_exists(workspace_id, backup_id):
            return False
        record: _Stored | None = self._tx.read(self.table).get(backup_id)
        if (None if record is None else record.status) is not expected:
            return False
        mailed = None if record is None else record.mailed_at
        self._tx.write(self.table)[backup_id] = _Stored(workspace_id, status, now, mailed)
        return True

    async def mark_mailed(
        self, workspace_id: UUID, backup_id: UUID, now: datetime, not_since: datetime
    ) -> bool:
        record: _Stored | None = self._tx.read(self.table).get(backup_id)
        if record is None or record.workspace_id != workspace_id:
            return False
        if record.mailed_at is not None and record.mailed_at > not_since:
            return False
        self._tx.write(self.table)[backup_id] = attrs.evolve(record, mailed_at=now)
        return True

    async def counts(self) -> Mapping[HealthStatus, int]:
        backups = self._tx.read("backups")
        return Counter(
            record.status
            for backup_id, record in self._tx.read(self.table).items()
            if backup_id in backups
        )


class MemoryWebhookRepository(MemoryRepository):
    """Webhooks (with their sealed secrets) and deliveries."""

    table = "webhooks"

    def _subscriptions(self) -> Mapping[UUID, Subscription]:
        return self._tx.read(self.table)

    async def add(self, subscription: Subscription) -> None:
        webhook = subscription.webhook
        require(webhook.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(webhook.id, subscription)

    async def get(self, workspace_id: UUID, webhook_id: UUID) -> Webhook | None:
        found = self._subscriptions().get(webhook_id)
        if found is None or found.webhook.workspace_id != workspace_id:
            return None
        return found.webhook

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Webhook]:
        return keyset_page(
            (
                s.webhook
                for s in self._subscriptions().values()
                if s.webhook.workspace_id == workspace_id
            ),
            page,
        )

    async def update(self, webhook: Webhook) -> None:
        found = self._subscriptions().get(webhook.id)
        require(found is not None, "update of a missing webhook")
        assert found is not None
        self._replace(webhook.id, attrs.evolve(found, webhook=webhook))

    async def delete(self, workspace_id: UUID, webhook_id: UUID) -> bool:
        if await self.get(workspace_id, webhook_id) is None:
            return False
        del self._tx.write(self.table)[webhook_id]
        deliveries = self._tx.write("webhook_deliveries")
        for key in [k for k, d in deliveries.items() if d.webhook_id == webhook_id]:
            del deliveries[key]
        return True

    async def subscribed(self, workspace_id: UUID, event: WebhookEvent) -> builtins.list[Webhook]:
        return sorted(
            (
                s.webhook
                for s in self._subscriptions().values()
                if s.webhook.workspace_id == workspace_id and s.webhook.wants(event)
            ),
            key=lambda webhook: (webhook.created_at, webhook.id),
        )

    async def add_delivery(self, delivery: Delivery) -> None:
        require(
            (await self.get(delivery.workspace_id, delivery.webhook_id)) is not None,
            "delivery's webhook exists in its workspace",
        )
        require(
            delivery.id not in self._tx.read("webhook_deliveries"), "a new webhook_deliveries row"
        )
        self._tx.write("webhook_deliveries")[delivery.id] = delivery

    async def get_delivery(
        self, workspace_id: UUID, webhook_id: UUID, delivery_id: UUID, *, for_update: bool = False
    ) -> Delivery | None:
        found: Delivery | None = self._tx.read("webhook_deliveries").get(delivery_id)
        if found is None or found.workspace_id != workspace_id or found.webhook_id != webhook_id:
            return None
        return found

    async def list_deliveries(
        self, workspace_id: UUID, webhook_id: UUID, page: PageRequest
    ) -> Page[Delivery]:
        return keyset_page(
            (
                d
                for d in self._tx.read("webhook_deliveries").values()
                if d.workspace_id == workspace_id and d.webhook_id == webhook_id
            ),
            page,
        )

    async def take_due(self, now: datetime, limit: int) -> builtins.list[Outgoing]:
        subscriptions = self._subscriptions()
        due = sorted(
            (d for d in self._tx.read("webhook_deliveries").values() if d.due(now)),
            key=lambda d: (d.next_attempt_at or d.created_at, d.id),
        )[:limit]
        deliveries = self._tx.write("webhook_deliveries")
        for delivery in due:
            deliveries[delivery.id] = attrs.evolve(delivery, next_attempt_at=now + DELIVERY_LEASE)
        # As the SQL adapters answer: the attempt is the one due at ``now``.
        return [
            Outgoing(
                attrs.evolve(d, next_attempt_at=now),
                subscriptions[d.webhook_id].webhook.url,
                subscriptions[d.webhook_id].sealed_secret,
            )
            for d in due
            if d.webhook_id in subscriptions
        ]

    async def save_delivery(self, delivery: Delivery) -> None:
        require(delivery.id in self._tx.read("webhook_deliveries"), "update of a missing delivery")
        self._tx.write("webhook_deliveries")[delivery.id] = delivery
