"""Webhook subscriptions and deliveries (contract 16): which events, how long a delivery
is retried, and what its log keeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.webhooks import (
    RETRY_DELAYS,
    Attempt,
    Delivery,
    DeliveryState,
    Webhook,
    WebhookEvent,
    subscribed_events,
)

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def delivery() -> Delivery:
    return Delivery(uuid4(), uuid4(), uuid4(), WebhookEvent.RUN_FAILED, "{}", NOW)


def answer(at: datetime, status: int | None) -> Attempt:
    return Attempt(at, status, 12, None if status else "the receiver could not be reached")


class TestSubscriptions:
    def test_events_come_back_in_catalog_order_once_each(self) -> None:
        events = subscribed_events(["backup.late", "run.failed", "backup.late"])
        assert events == (WebhookEvent.RUN_FAILED, WebhookEvent.BACKUP_LATE)

    @pytest.mark.parametrize("events", [[], ["run.exploded"], ["webhook.ping"]])
    def test_no_event_an_unknown_one_or_the_ping_is_refused(self, events: list[str]) -> None:
        with pytest.raises(InvalidRequestError):
            subscribed_events(events)

    @pytest.mark.parametrize("url", ["ftp://x.example", "example.com", "https://", "h" * 2001])
    def test_urls_must_be_http(self, url: str) -> None:
        with pytest.raises(InvalidRequestError):
            Webhook(uuid4(), uuid4(), url, (WebhookEvent.RUN_FAILED,), NOW)

    def test_a_webhook_gets_its_events_and_every_ping(self) -> None:
        hook = Webhook(uuid4(), uuid4(), "https://h.example/in", (WebhookEvent.RUN_FAILED,), NOW)
        assert hook.wants(WebhookEvent.RUN_FAILED)
        assert hook.wants(WebhookEvent.PING)
        assert not hook.wants(WebhookEvent.BACKUP_LATE)


class TestDeliveries:
    def test_retries_start_within_seconds_and_stop_within_a_day(self) -> None:
        assert RETRY_DELAYS[0] <= timedelta(seconds=5)
        assert RETRY_DELAYS[1] <= timedelta(seconds=30)
        assert sum(RETRY_DELAYS, timedelta()) <= timedelta(hours=24)
        assert sum(RETRY_DELAYS, timedelta()) >= timedelta(hours=20)

    def test_a_receiver_that_fails_five_times_then_answers_gets_it_with_every_attempt(
        self,
    ) -> None:
        sent = delivery()
        moment = NOW
        for _ in range(5):
            assert sent.due(moment)
            sent = sent.attempted(answer(moment, 503))
            assert sent.state is DeliveryState.PENDING
            assert sent.next_attempt_at is not None
            assert not sent.due(sent.next_attempt_at - timedelta(milliseconds=1))
            moment = sent.next_attempt_at
        sent = sent.attempted(answer(moment, 204))
        assert sent.state is DeliveryState.SUCCEEDED
        assert [a.status_code for a in sent.attempts] == [503] * 5 + [204]
        assert not sent.due(moment + timedelta(days=2))

    @given(st.lists(st.sampled_from([None, 301, 404, 500, 503]), max_size=30))
    def test_a_dead_receiver_gives_up_after_the_last_delay(self, answers: list[int | None]) -> None:
        """Never more than one attempt plus one per delay; failed only when all are used."""
        sent = delivery()
        moment = NOW
        for status in answers:
            if not sent.due(moment):
                break
            sent = sent.attempted(answer(moment, status))
            moment = sent.next_attempt_at or moment
        assert len(sent.attempts) <= 1 + len(RETRY_DELAYS)
        assert (sent.state is DeliveryState.FAILED) == (len(sent.attempts) == 1 + len(RETRY_DELAYS))

    def test_redelivery_keeps_the_log_and_is_due_at_once(self) -> None:
        sent = delivery().attempted(answer(NOW, 500))
        again = sent.redelivered(NOW + timedelta(seconds=1))
        assert again.due(NOW + timedelta(seconds=1))
        assert again.attempts == sent.attempts
