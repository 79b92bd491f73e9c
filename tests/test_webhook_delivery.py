"""Health and webhooks end to end in one process (contract 16): a backup whose runs stop
goes late with the clock advanced, and exactly one signed ``backup.late`` reaches a real
HTTP receiver on loopback (verified with the ``standardwebhooks`` package), one mail
reaches a real SMTP server (``aiosmtpd``), and ``backup.recovered`` follows the next
success; a receiver that fails five times gets the event on the sixth attempt, every
attempt in the delivery log; an address the policy refuses after resolution fails the
attempt with the outbound stage's fixed message."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Message
from standardwebhooks.webhooks import Webhook as Verifier

from strongroom.adapters.mail import SmtpMailer, SmtpSettings
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.outbound.policy import Budget, Outbound, Stage
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.webhooks.sender import WebhookSender
from strongroom.domain.backups import BackupChanges, Freshness
from strongroom.domain.durations import Duration
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.pagination import PageRequest
from strongroom.domain.webhooks import RETRY_DELAYS, DeliveryState
from strongroom.ports.driving import Strongroom
from support.people import active_manual, upload, workspace_admin
from support.receivers import receiver
from support.serve_process import free_port
from support.world import memory_facade

LOOPBACK = EndpointPolicy.parse("127.0.0.0/8")


class Inbox(Message):
    """Keeps every message the SMTP server receives."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[object] = []

    def handle_message(self, message: object) -> None:
        self.messages.append(message)


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def facade_with(tmp_path: Path, clock: ManualClock, smtp_port: int | None = None) -> Strongroom:
    storage = LocalDiskStorage(tmp_path / "objects", b"webhook tests", clock=clock.now)
    overrides: dict[str, object] = {"storage": storage, "endpoint_policy": LOOPBACK}
    if smtp_port is not None:
        overrides["mailer"] = SmtpMailer(
            SmtpSettings("127.0.0.1", "strongroom@example.com", port=smtp_port, starttls=False)
        )
    return memory_facade(clock, **overrides)


async def succeed(facade: Strongroom, ada: object, backup: object) -> None:
    storage = facade.storage
    assert isinstance(storage, LocalDiskStorage)
    run = await facade.runs.start(ada, backup)  # type: ignore[arg-type]
    await upload(facade, storage, ada, run.id, "dump", b"data")  # type: ignore[arg-type]
    await facade.artifacts.confirm(ada, run.id)  # type: ignore[arg-type]


def test_a_silent_backup_is_announced_once_signed_and_mailed_then_recovered(
    tmp_path: Path, smtp: tuple[Inbox, int]
) -> None:
    inbox, port = smtp
    clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
    facade = facade_with(tmp_path, clock, port)
    sender = WebhookSender(facade.webhooks, Outbound(LOOPBACK), clock.now)

    async def scenario(url: str) -> tuple[str, str]:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        await facade.backups.update(ada, backup, BackupChanges(freshness=Freshness(Duration(3600))))
        created = await facade.webhooks.create(ada, wid, url, ["backup.late", "backup.recovered"])
        await succeed(facade, ada, backup)
        await facade.health.evaluate()
        assert await sender.send_due() == 0  # healthy: nothing to say
        clock.advance(timedelta(hours=2))  # the agent stopped: no run for two hours
        for _ in range(3):
            await facade.health.evaluate()
            await sender.send_due()
        clock.advance(timedelta(minutes=1))
        await succeed(facade, ada, backup)
        await facade.health.evaluate()
        await sender.send_due()
        return created.secret, str(backup)

    with receiver() as hook:
        secret, backup_id = asyncio.run(scenario(hook.url))
        late, recovered = hook.wait_for(2)
    sender.close()
    verifier = Verifier(secret)
    bodies = [verifier.verify(r.body, r.headers) for r in (late, recovered)]
    assert [b["type"] for b in bodies] == ["backup.late", "backup.recovered"]
    assert bodies[0]["data"]["backup_id"] == backup_id
    assert bodies[0]["data"]["status"] == "late"
    assert len(hook.received) == 2
    assert len(inbox.messages) == 1
    assert "late" in str(inbox.messages[0]["Subject"])  # type: ignore[index]
    assert inbox.messages[0]["To"] == "ada@example.com"  # type: ignore[index]


def test_a_receiver_failing_five_times_gets_the_event_with_every_attempt_logged(
    tmp_path: Path,
) -> None:
    clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
    facade = facade_with(tmp_path, clock)
    sender = WebhookSender(facade.webhooks, Outbound(LOOPBACK), clock.now)

    async def scenario(url: str) -> list[object]:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        created = await facade.webhooks.create(ada, wid, url, ["run.failed"])
        run = await facade.runs.start(ada, backup)
        await facade.claims.fail(ada, run.id, "disk full")
        for delay in RETRY_DELAYS[:5]:
            assert await sender.send_due() == 1
            assert await sender.send_due() == 0  # not due before its delay
            clock.advance(delay)
        assert await sender.send_due() == 1
        page = await facade.webhooks.deliveries(ada, created.webhook.id, PageRequest(10))
        return list(page.items)

    with receiver([500, 503, 500, 404, 500]) as hook:
        [delivery] = asyncio.run(scenario(hook.url))
        received = hook.wait_for(6)
    sender.close()
    assert delivery.state is DeliveryState.SUCCEEDED  # type: ignore[attr-defined]
    codes = [a.status_code for a in delivery.attempts]  # type: ignore[attr-defined]
    assert codes == [500, 503, 500, 404, 500, 204]
    assert all(a.latency_ms >= 0 for a in delivery.attempts)  # type: ignore[attr-defined]
    assert len({r.headers["webhook-id"] for r in received}) == 1
    assert json.loads(received[-1].body)["type"] == "run.failed"


def test_an_address_refused_after_resolution_fails_with_the_fixed_message(
    tmp_path: Path,
) -> None:
    clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
    facade = facade_with(tmp_path, clock)
    # The URL names a host; the service's policy refuses loopback once it is resolved.
    refusing = Outbound(EndpointPolicy.parse("none"), budget=Budget(0.5, 0.5, 1.0))
    sender = WebhookSender(facade.webhooks, refusing, clock.now)

    async def scenario(url: str) -> object:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        created = await facade.webhooks.create(ada, wid, url, ["run.failed"])
        await facade.webhooks.ping(ada, created.webhook.id)
        await sender.send_due()
        page = await facade.webhooks.deliveries(ada, created.webhook.id, PageRequest(10))
        return page.items[0]

    with receiver() as hook:
        named = hook.url.replace("127.0.0.1", "localhost")
        delivery = asyncio.run(scenario(named))
        assert hook.received == []
    sender.close()
    [attempt] = delivery.attempts  # type: ignore[attr-defined]
    assert (attempt.status_code, attempt.error) == (None, Stage.WEBHOOK.message)
    assert delivery.state is DeliveryState.PENDING  # type: ignore[attr-defined]
