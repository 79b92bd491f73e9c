"""Health records and webhooks with their outbox, on every adapter: the facts a health is
evaluated from, the stored status's compare-and-set, the mail rate limit, webhooks'
scoping and the outbox's lease."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import attrs
from contract_records import T0, Adapter, at, backup, user, workspace

from strongroom.domain.backups import Freshness, Schedule
from strongroom.domain.durations import Duration
from strongroom.domain.freshness import HealthStatus
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import Run, RunState
from strongroom.domain.webhooks import (
    DELIVERY_LEASE,
    Attempt,
    Delivery,
    DeliveryState,
    Webhook,
    WebhookEvent,
)
from strongroom.ports.driven.assurance_repositories import Subscription
from strongroom.ports.driven.repositories import IntegrityViolationError


def finished(
    owner_backup: object, state: RunState, seconds: float, error: str | None = None
) -> Run:
    run = Run.manual(uuid4(), owner_backup, T0)  # type: ignore[arg-type]
    return attrs.evolve(run, state=state, finished_at=at(seconds), error=error)


class TestHealth:
    def test_facts_name_the_newest_success_and_failure(self, adapter: Adapter) -> None:
        ada = user()
        target = workspace(ada)
        quiet = attrs.evolve(
            backup(target.id),
            freshness=Freshness(Duration(3600)),
        )
        other = backup(workspace(ada).id)
        adapter.store(ada, target, workspace(ada, id=other.workspace_id), quiet, other)
        adapter.store(
            finished(quiet, RunState.SUCCEEDED, 10),
            finished(quiet, RunState.SUCCEEDED, 20),
            finished(quiet, RunState.FAILED, 15, "old"),
            finished(quiet, RunState.FAILED, 30, "newest"),
            finished(quiet, RunState.CANCELLED, 40),
        )
        with adapter.uow() as uow:
            [facts] = uow.health.facts(target.id)
            assert len(uow.health.facts(None)) == 2
        assert facts.backup_id == quiet.id
        assert facts.freshness == Freshness(Duration(3600))
        assert facts.last_success_at == at(20)
        assert facts.last_failure is not None
        assert (facts.last_failure.error, facts.last_failure.at) == ("newest", at(30))
        assert (facts.stored, facts.mailed_at, facts.schedule) == (None, None, None)

    def test_a_schedule_counts_only_while_the_scheduler_runs_the_backup(
        self, adapter: Adapter
    ) -> None:
        ada = user()
        target = workspace(ada)
        hourly = Schedule("0 * * * *", "UTC")
        paused = attrs.evolve(backup(target.id), schedule=hourly, paused=True)
        adapter.store(ada, target, paused)
        with adapter.uow() as uow:
            [facts] = uow.health.facts(target.id)
        assert facts.schedule is None

    def test_the_stored_status_moves_only_from_what_was_read(self, adapter: Adapter) -> None:
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        adapter.store(ada, target, owner)
        with adapter.uow() as uow:
            assert uow.health.store(target.id, owner.id, None, HealthStatus.OK, T0)
            assert not uow.health.store(target.id, owner.id, None, HealthStatus.LATE, T0)
            assert not uow.health.store(target.id, owner.id, HealthStatus.LATE, HealthStatus.OK, T0)
            assert uow.health.store(target.id, owner.id, HealthStatus.OK, HealthStatus.LATE, T0)
            assert not uow.health.store(target.id, uuid4(), None, HealthStatus.OK, T0)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.health.facts(target.id)[0].stored is HealthStatus.LATE
            assert uow.health.counts() == {HealthStatus.LATE: 1}

    def test_a_mail_is_recorded_at_most_once_a_window(self, adapter: Adapter) -> None:
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        adapter.store(ada, target, owner)
        hour = timedelta(hours=1)
        with adapter.uow() as uow:
            assert not uow.health.mark_mailed(target.id, owner.id, T0, T0 - hour)
            uow.health.store(target.id, owner.id, None, HealthStatus.FAILING, T0)
            assert uow.health.mark_mailed(target.id, owner.id, T0, T0 - hour)
            assert not uow.health.mark_mailed(target.id, owner.id, at(60), at(60) - hour)
            later = T0 + hour
            assert uow.health.mark_mailed(target.id, owner.id, later, later - hour)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.health.facts(target.id)[0].mailed_at == T0 + hour


def hook(
    workspace_id: object,
    seconds: float = 0,
    events: tuple[WebhookEvent, ...] = (WebhookEvent.RUN_FAILED,),
) -> Webhook:
    return Webhook(uuid4(), workspace_id, "https://hooks.example.com/", events, at(seconds))  # type: ignore[arg-type]


class TestWebhooks:
    def test_webhooks_are_scoped_listed_updated_and_deleted(self, adapter: Adapter) -> None:
        ada = user()
        target, elsewhere = workspace(ada), workspace(ada)
        adapter.store(ada, target, elsewhere)
        first, second = hook(target.id, 1), hook(target.id, 2)
        with adapter.uow() as uow:
            for made in (first, second):
                uow.webhooks.add(Subscription(made, b"sealed"))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.webhooks.get(target.id, first.id) == first
            assert uow.webhooks.get(elsewhere.id, first.id) is None
            page = uow.webhooks.list(target.id, PageRequest(1))
            assert page.items == [second]
            rest = uow.webhooks.list(target.id, PageRequest(1, page.next_cursor))
            assert rest.items == [first]
            changed = attrs.evolve(
                first, url="https://b.example/", events=(WebhookEvent.BACKUP_LATE,)
            )
            uow.webhooks.update(changed)
            assert uow.webhooks.subscribed(target.id, WebhookEvent.BACKUP_LATE) == [changed]
            assert uow.webhooks.subscribed(target.id, WebhookEvent.PING) == [changed, second]
            assert not uow.webhooks.delete(elsewhere.id, first.id)
            assert uow.webhooks.delete(target.id, first.id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.webhooks.get(target.id, first.id) is None

    def test_the_outbox_leases_due_deliveries_and_keeps_attempts(self, adapter: Adapter) -> None:
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target)
        made = hook(target.id)
        early = Delivery(
            uuid4(), made.id, target.id, WebhookEvent.RUN_FAILED, "{}", T0, next_attempt_at=T0
        )
        later = Delivery(
            uuid4(),
            made.id,
            target.id,
            WebhookEvent.RUN_FAILED,
            "{}",
            at(1),
            next_attempt_at=at(100),
        )
        with adapter.uow() as uow:
            uow.webhooks.add(Subscription(made, b"sealed"))
            uow.webhooks.add_delivery(early)
            uow.webhooks.add_delivery(later)
            uow.commit()
        with adapter.uow() as uow:
            [taken] = uow.webhooks.take_due(at(10), 10)
            uow.commit()
        assert taken.delivery == attrs.evolve(early, next_attempt_at=at(10))
        assert (taken.url, taken.sealed_secret) == (made.url, b"sealed")
        with adapter.uow() as uow:
            assert uow.webhooks.take_due(at(20), 10) == []  # leased
            after = early.attempted(Attempt(at(10), None, 3000, "the webhook could not be reached"))
            uow.webhooks.save_delivery(after)
            uow.commit()
        with adapter.uow() as uow:
            stored = uow.webhooks.get_delivery(target.id, made.id, early.id)
            assert stored == after
            page = uow.webhooks.list_deliveries(target.id, made.id, PageRequest(10))
            assert [d.id for d in page.items] == [later.id, early.id]
            due = uow.webhooks.take_due(at(10) + DELIVERY_LEASE, 10)
            assert {d.delivery.id for d in due} == {early.id, later.id}

    def test_a_delivery_needs_its_webhook_in_its_workspace(self, adapter: Adapter) -> None:
        ada = user()
        target, elsewhere = workspace(ada), workspace(ada)
        adapter.store(ada, target, elsewhere)
        made = hook(target.id)
        stray = Delivery(
            uuid4(), made.id, elsewhere.id, WebhookEvent.RUN_FAILED, "{}", T0, next_attempt_at=T0
        )
        with adapter.uow() as uow:
            uow.webhooks.add(Subscription(made, b"sealed"))
            uow.commit()
        with adapter.uow() as uow:
            try:
                uow.webhooks.add_delivery(stray)
            except IntegrityViolationError:
                pass
            else:
                raise AssertionError("a delivery of another workspace's webhook was stored")
        assert DeliveryState.PENDING is stray.state
