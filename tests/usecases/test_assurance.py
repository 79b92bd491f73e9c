"""Health and notifications through the facade (contract 16): freshness on a backup, the
health list, the evaluator's once-per-spell announcements and mails, the outbox written
with the run's change, webhooks' rules and the delivery log's retries."""

from __future__ import annotations

import json
from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock, OutboxMailer
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.backups import BackupChanges, Freshness, S3Source
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError, NotFoundError, ValidationFailedError
from strongroom.domain.freshness import HealthStatus
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.webhooks import RETRY_DELAYS, Attempt, DeliveryState, WebhookEvent
from strongroom.ports.driving import Strongroom
from support.people import active_manual, upload, workspace_admin
from support.restores import cloud_backup
from support.world import memory_facade

HOUR = timedelta(hours=1)


@pytest.fixture
def mailer() -> OutboxMailer:
    return OutboxMailer()


@pytest.fixture
def facade(clock: ManualClock, storage: LocalDiskStorage, mailer: OutboxMailer) -> Strongroom:
    return memory_facade(clock, storage=storage, mailer=mailer)


async def succeed(facade: Strongroom, storage: LocalDiskStorage, ada: Caller, backup: UUID) -> None:
    run = await facade.runs.start(ada, backup)
    await upload(facade, storage, ada, run.id, "dump", b"data")
    await facade.artifacts.confirm(ada, run.id)


async def fresh_backup(facade: Strongroom, ada: Caller, name: str = "Nightly") -> UUID:
    backup = await active_manual(facade, ada, name)
    await facade.backups.update(ada, backup, BackupChanges(freshness=Freshness(Duration(3600))))
    return backup


async def webhook(facade: Strongroom, ada: Caller, events: list[str]) -> UUID:
    created = await facade.webhooks.create(
        ada, ada.scoped_workspace(), "https://hooks.example.com/in", events
    )
    return created.webhook.id


class TestFreshness:
    async def test_set_and_removed_by_patch(self, facade: Strongroom) -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await fresh_backup(facade, ada)
        assert (await facade.backups.get(ada, backup)).freshness == Freshness(Duration(3600))
        await facade.backups.update(ada, backup, BackupChanges(freshness=None))
        assert (await facade.backups.get(ada, backup)).freshness is None

    def test_a_max_age_of_zero_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError):
            Freshness(Duration(0))


class TestHealthList:
    async def test_late_and_failing_first(
        self, facade: Strongroom, clock: ManualClock, storage: LocalDiskStorage
    ) -> None:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        late = await fresh_backup(facade, ada, "Late")
        await succeed(facade, storage, ada, late)
        clock.advance(2 * HOUR)
        failing = await active_manual(facade, ada, "Failing")
        run = await facade.runs.start(ada, failing)
        await facade.claims.fail(ada, run.id, "disk full")
        never = await active_manual(facade, ada, "Never")
        page = await facade.health.list_in(ada, wid, PageRequest(10))
        assert [(h.backup_id, h.status) for h in page.items] == [
            (late, HealthStatus.LATE),
            (failing, HealthStatus.FAILING),
            (never, HealthStatus.NEVER),
        ]
        assert page.items[0].age_seconds == 7200
        assert page.items[1].last_failure is not None
        assert page.items[1].last_failure.error == "disk full"

    async def test_pages_follow_the_order(self, facade: Strongroom, clock: ManualClock) -> None:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        made = []
        for i in range(3):
            made.append(await active_manual(facade, ada, f"B{i}"))
            clock.advance(timedelta(seconds=1))
        first = await facade.health.list_in(ada, wid, PageRequest(2))
        second = await facade.health.list_in(ada, wid, PageRequest(2, first.next_cursor))
        shown = [h.backup_id for h in [*first.items, *second.items]]
        assert shown == made[::-1]
        assert second.next_cursor is None

    async def test_another_workspace_is_not_shown(self, facade: Strongroom) -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        _bob, other = await workspace_admin(facade, "bob@example.com", "Globex")
        with pytest.raises(NotFoundError):
            await facade.health.list_in(ada, other, PageRequest(10))


class TestEvaluator:
    async def test_late_is_announced_once_then_recovered(
        self,
        facade: Strongroom,
        clock: ManualClock,
        storage: LocalDiskStorage,
        mailer: OutboxMailer,
    ) -> None:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await fresh_backup(facade, ada)
        hook = await webhook(facade, ada, ["backup.late", "backup.recovered"])
        await succeed(facade, storage, ada, backup)
        assert (await facade.health.evaluate()).announced == ()
        clock.advance(HOUR + timedelta(seconds=1))
        first = await facade.health.evaluate()
        again = await facade.health.evaluate()
        assert first.announced == ((backup, WebhookEvent.BACKUP_LATE.value),)
        assert again.announced == ()
        assert [m.to for m in mailer.outbox] == ["ada@example.com"]
        assert "late" in mailer.outbox[0].subject
        clock.advance(timedelta(minutes=1))
        await succeed(facade, storage, ada, backup)
        recovered = await facade.health.evaluate()
        assert recovered.announced == ((backup, WebhookEvent.BACKUP_RECOVERED.value),)
        log = await facade.webhooks.deliveries(ada, hook, PageRequest(10))
        assert [d.event for d in log.items] == [
            WebhookEvent.BACKUP_RECOVERED,
            WebhookEvent.BACKUP_LATE,
        ]
        body = json.loads(log.items[1].payload)
        assert body["type"] == "backup.late"
        assert body["data"]["backup_id"] == str(backup)
        assert (await facade.health.counts()) == {HealthStatus.OK: 1}
        assert wid == ada.scoped_workspace()

    async def test_a_failed_run_mails_admins_at_most_once_an_hour(
        self, facade: Strongroom, clock: ManualClock, mailer: OutboxMailer
    ) -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        for _ in range(2):
            run = await facade.runs.start(ada, backup)
            await facade.claims.fail(ada, run.id, "disk full")
            await facade.health.evaluate()
            clock.advance(timedelta(minutes=10))
        assert len(mailer.outbox) == 1
        clock.advance(HOUR)
        await facade.health.evaluate()
        assert len(mailer.outbox) == 2


class TestOutbox:
    async def test_a_failed_run_queues_run_failed_with_its_change(self, facade: Strongroom) -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        hook = await webhook(facade, ada, ["run.failed"])
        other = await webhook(facade, ada, ["run.succeeded"])
        run = await facade.runs.start(ada, backup)
        await facade.claims.fail(ada, run.id, "disk full")
        [delivery] = (await facade.webhooks.deliveries(ada, hook, PageRequest(10))).items
        assert delivery.event is WebhookEvent.RUN_FAILED
        assert json.loads(delivery.payload)["data"]["run_id"] == str(run.id)
        assert (await facade.webhooks.deliveries(ada, other, PageRequest(10))).items == []

    async def test_retries_follow_the_delays_and_every_attempt_is_kept(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        hook = await webhook(facade, ada, ["run.failed"])
        await facade.webhooks.ping(ada, hook)
        for failure in range(5):
            [due] = await facade.webhooks.take_due()
            assert await facade.webhooks.take_due() == []  # leased to the first sender
            after = await facade.webhooks.record(due.delivery, Attempt(clock.now(), 500, 12))
            assert after is not None
            assert after.next_attempt_at == clock.now() + RETRY_DELAYS[failure]
            clock.advance(RETRY_DELAYS[failure])
        [due] = await facade.webhooks.take_due()
        assert due.secret.startswith("whsec_")
        await facade.webhooks.record(due.delivery, Attempt(clock.now(), 204, 3))
        [logged] = (await facade.webhooks.deliveries(ada, hook, PageRequest(10))).items
        assert logged.state is DeliveryState.SUCCEEDED
        assert [a.status_code for a in logged.attempts] == [500] * 5 + [204]
        redelivered = await facade.webhooks.redeliver(ada, hook, logged.id)
        assert redelivered.state is DeliveryState.PENDING
        assert len(await facade.webhooks.take_due()) == 1


class TestWebhooks:
    async def test_the_secret_is_shown_once_and_the_url_obeys_the_policy(
        self, facade: Strongroom
    ) -> None:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        created = await facade.webhooks.create(
            ada, wid, "https://hooks.example.com/in", ["run.failed", "backup.late"]
        )
        assert created.secret.startswith("whsec_")
        assert created.webhook.events == (WebhookEvent.RUN_FAILED, WebhookEvent.BACKUP_LATE)
        with pytest.raises(ValidationFailedError):
            await facade.webhooks.create(ada, wid, "http://127.0.0.1:8080/", ["run.failed"])
        with pytest.raises(ValidationFailedError):
            await facade.webhooks.update(ada, created.webhook.id, url="http://169.254.169.254/")
        with pytest.raises(InvalidRequestError):
            await facade.webhooks.create(ada, wid, "https://x.example/", ["webhook.ping"])
        with pytest.raises(InvalidRequestError):
            await facade.webhooks.create(
                ada, wid, "https://x.example/", ["run.failed"], secret="whsec_short"
            )
        updated = await facade.webhooks.update(ada, created.webhook.id, events=["drill.finished"])
        assert updated.events == (WebhookEvent.DRILL_FINISHED,)
        assert (await facade.webhooks.get(ada, created.webhook.id)) == updated
        await facade.webhooks.delete(ada, created.webhook.id)
        with pytest.raises(NotFoundError):
            await facade.webhooks.get(ada, created.webhook.id)
        assert (await facade.webhooks.list(ada, wid, PageRequest(10))).items == []


class TestDrillEvents:
    async def test_a_drill_that_ends_queues_drill_finished(self, facade: Strongroom) -> None:
        """A drill of a backup with nothing to restore ends ``failed``, announced with the
        change that records it."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_backup(facade, ada, S3Source("https://s3.example.com", "source"))
        hook = await webhook(facade, ada, ["drill.finished"])
        drill = await facade.drills.create(ada, backup.id)
        taken = await facade.drills.take_next()
        assert taken is not None
        [delivery] = (await facade.webhooks.deliveries(ada, hook, PageRequest(10))).items
        body = json.loads(delivery.payload)
        assert (body["type"], body["data"]["drill_id"]) == ("drill.finished", str(drill.id))
        assert body["data"]["state"] == taken[0].state.value
