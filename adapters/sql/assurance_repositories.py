"""SQL health records and webhooks with their outbox (0018)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Codec, Params, Row, read_opt_timestamp
from strongroom.adapters.sql.statements import SqlRepository, page_params, require
from strongroom.domain.backups import BackupState, Freshness, Schedule
from strongroom.domain.durations import Duration
from strongroom.domain.freshness import Failure, HealthStatus
from strongroom.domain.pagination import Page, PageRequest, page_of
from strongroom.domain.webhooks import (
    DELIVERY_LEASE,
    Attempt,
    Delivery,
    DeliveryState,
    Webhook,
    WebhookEvent,
)
from strongroom.ports.driven.assurance_repositories import HealthFacts, Outgoing, Subscription


def _facts_from_row(row: Row, codec: Codec) -> HealthFacts:
    cron, max_age = row["schedule_cron"], row["freshness_max_age_seconds"]
    failure_id = row["failure_id"]
    scheduled = (
        cron is not None and BackupState(row["state"]) is BackupState.ACTIVE and not row["paused"]
    )
    stored = row["stored_status"]
    return HealthFacts(
        backup_id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        name=row["name"],
        created_at=codec.read_timestamp(row["created_at"]),
        freshness=None if max_age is None else Freshness(Duration(max_age)),
        schedule=Schedule(cron, row["schedule_timezone"]) if scheduled else None,
        last_success_at=read_opt_timestamp(codec, row["last_success_at"]),
        last_failure=None
        if failure_id is None
        else Failure(
            codec.read_uuid(failure_id),
            row["failure_error"],
            codec.read_timestamp(row["failure_at"]),
        ),
        stored=None if stored is None else HealthStatus(stored),
        mailed_at=read_opt_timestamp(codec, row["mailed_at"]),
    )


class SqlHealthRepository(SqlRepository):
    """Health facts read with the backups and runs; the stored status per backup."""

    async def facts(self, workspace_id: UUID | None) -> list[HealthFacts]:
        """Every backup of a workspace (of every workspace: None)."""
        params: Params = {}
        filters: list[Q] = []
        if workspace_id is not None:
            params["workspace_id"] = self._codec.uuid(workspace_id)
            filters.append(Q.FILTER_HEALTH_WORKSPACE)
        found = await self._db.fetch_all(Q.HEALTH_FACTS, params, filters=filters)
        return [_facts_from_row(row, self._codec) for row in found]

    async def store(
        self,
        workspace_id: UUID,
        backup_id: UUID,
        expected: HealthStatus | None,
        status: HealthStatus,
        now: datetime,
    ) -> bool:
        """Compare-and-set of the stored status."""
        params: Params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
            "status": status.value,
            "changed_at": self._codec.timestamp(now),
        }
        if expected is None:
            return await self._db.execute(Q.HEALTH_INSERT, params) == 1
        params["expected"] = expected.value
        return await self._db.execute(Q.HEALTH_UPDATE, params) == 1

    async def mark_mailed(
        self, workspace_id: UUID, backup_id: UUID, now: datetime, not_since: datetime
    ) -> bool:
        """Record a mail unless one was recorded after ``not_since``."""
        changed = await self._db.execute(
            Q.HEALTH_MAILED,
            {
                "workspace_id": self._codec.uuid(workspace_id),
                "backup_id": self._codec.uuid(backup_id),
                "mailed_at": self._codec.timestamp(now),
                "not_since": self._codec.timestamp(not_since),
            },
        )
        return changed == 1

    async def counts(self) -> Mapping[HealthStatus, int]:
        """Backups by stored status."""
        found = await self._db.fetch_all(Q.HEALTH_COUNTS, {})
        return {HealthStatus(row["status"]): int(row["n"]) for row in found}


def _webhook_from_row(row: Row, codec: Codec) -> Webhook:
    return Webhook(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        url=row["url"],
        events=tuple(WebhookEvent(name) for name in codec.read_json(row["events"])),
        created_at=codec.read_timestamp(row["created_at"]),
    )


def _attempts_json(attempts: tuple[Attempt, ...]) -> list[dict[str, Any]]:
    return [
        {
            "at": attempt.at.isoformat(),
            "status_code": attempt.status_code,
            "latency_ms": attempt.latency_ms,
            "error": attempt.error,
        }
        for attempt in attempts
    ]


def _delivery_from_row(row: Row, codec: Codec) -> Delivery:
    return Delivery(
        id=codec.read_uuid(row["id"]),
        webhook_id=codec.read_uuid(row["webhook_id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        event=WebhookEvent(row["event"]),
        payload=row["payload"],
        created_at=codec.read_timestamp(row["created_at"]),
        state=DeliveryState(row["state"]),
        attempts=tuple(
            Attempt(
                datetime.fromisoformat(item["at"]),
                item["status_code"],
                item["latency_ms"],
                item["error"],
            )
            for item in codec.read_json(row["attempts"])
        ),
        next_attempt_at=read_opt_timestamp(codec, row["next_attempt_at"]),
    )


class SqlWebhookRepository(SqlRepository):
    """Webhooks (their secrets sealed) and the outbox of deliveries."""

    async def add(self, subscription: Subscription) -> None:
        """Store a new webhook."""
        webhook = subscription.webhook
        await self._db.execute(
            Q.WEBHOOK_INSERT,
            {
                "id": self._codec.uuid(webhook.id),
                "workspace_id": self._codec.uuid(webhook.workspace_id),
                "url": webhook.url,
                "events": self._codec.json([event.value for event in webhook.events]),
                "sealed_secret": subscription.sealed_secret,
                "created_at": self._codec.timestamp(webhook.created_at),
            },
        )

    async def get(self, workspace_id: UUID, webhook_id: UUID) -> Webhook | None:
        """A webhook of the workspace."""
        row = await self._db.fetch_one(
            Q.WEBHOOK_GET,
            {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(webhook_id)},
        )
        return None if row is None else _webhook_from_row(row, self._codec)

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Webhook]:
        """The workspace's webhooks, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.WEBHOOK_LIST, params, filters=[Q.FILTER_WEBHOOK_AFTER] if after else []
        )
        return page_of([_webhook_from_row(row, self._codec) for row in found], page)

    async def update(self, webhook: Webhook) -> None:
        """Store a webhook's URL and events."""
        await self._db.execute(
            Q.WEBHOOK_UPDATE,
            {
                "workspace_id": self._codec.uuid(webhook.workspace_id),
                "id": self._codec.uuid(webhook.id),
                "url": webhook.url,
                "events": self._codec.json([event.value for event in webhook.events]),
            },
        )

    async def delete(self, workspace_id: UUID, webhook_id: UUID) -> bool:
        """Delete a webhook (its deliveries go by ON DELETE CASCADE)."""
        changed = await self._db.execute(
            Q.WEBHOOK_DELETE,
            {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(webhook_id)},
        )
        return changed == 1

    async def subscribed(self, workspace_id: UUID, event: WebhookEvent) -> builtins.list[Webhook]:
        """The workspace's webhooks that want ``event``."""
        found = await self._db.fetch_all(
            Q.WEBHOOK_IN_WORKSPACE, {"workspace_id": self._codec.uuid(workspace_id)}
        )
        webhooks = [_webhook_from_row(row, self._codec) for row in found]
        return [webhook for webhook in webhooks if webhook.wants(event)]

    def _delivery_params(self, delivery: Delivery) -> Params:
        codec = self._codec
        return {
            "id": codec.uuid(delivery.id),
            "webhook_id": codec.uuid(delivery.webhook_id),
            "workspace_id": codec.uuid(delivery.workspace_id),
            "event": delivery.event.value,
            "payload": delivery.payload,
            "created_at": codec.timestamp(delivery.created_at),
            "state": delivery.state.value,
            "attempts": codec.json(_attempts_json(delivery.attempts)),
            "next_attempt_at": codec.timestamp(delivery.next_attempt_at or delivery.created_at),
        }

    async def add_delivery(self, delivery: Delivery) -> None:
        """Write a delivery into the outbox."""
        changed = await self._db.execute(Q.DELIVERY_INSERT, self._delivery_params(delivery))
        require(changed == 1, "delivery's webhook exists in its workspace")

    async def get_delivery(
        self, workspace_id: UUID, webhook_id: UUID, delivery_id: UUID, *, for_update: bool = False
    ) -> Delivery | None:
        """One delivery of a webhook of the workspace."""
        row = await self._db.fetch_one(
            Q.DELIVERY_GET,
            {
                "workspace_id": self._codec.uuid(workspace_id),
                "webhook_id": self._codec.uuid(webhook_id),
                "id": self._codec.uuid(delivery_id),
            },
            writes=for_update,
        )
        return None if row is None else _delivery_from_row(row, self._codec)

    async def list_deliveries(
        self, workspace_id: UUID, webhook_id: UUID, page: PageRequest
    ) -> Page[Delivery]:
        """A webhook's deliveries, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        params["webhook_id"] = self._codec.uuid(webhook_id)
        found = await self._db.fetch_all(
            Q.DELIVERY_LIST, params, filters=[Q.FILTER_DELIVERY_AFTER] if after else []
        )
        return page_of([_delivery_from_row(row, self._codec) for row in found], page)

    async def take_due(self, now: datetime, limit: int) -> builtins.list[Outgoing]:
        """Due deliveries, leased to this sender for ``DELIVERY_LEASE``."""
        [found] = await self._db.write_all(
            [
                (
                    Q.DELIVERY_TAKE,
                    {
                        "now": self._codec.timestamp(now),
                        "lease_until": self._codec.timestamp(now + DELIVERY_LEASE),
                        "limit": limit,
                    },
                    "all",
                )
            ]
        )
        return [
            Outgoing(_delivery_from_row(row, self._codec), row["url"], bytes(row["sealed_secret"]))
            for row in found
        ]

    async def save_delivery(self, delivery: Delivery) -> None:
        """Store a delivery's state, attempts and next attempt."""
        params = self._delivery_params(delivery)
        params["next_attempt_at"] = (
            None
            if delivery.next_attempt_at is None
            else self._codec.timestamp(delivery.next_attempt_at)
        )
        await self._db.execute(Q.DELIVERY_UPDATE, params)
