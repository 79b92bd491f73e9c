"""The assurance loops of ``serve`` (contract 16): the health evaluator, which notices a
late backup whoever calls, and the webhook sender, which empties the outbox."""

from __future__ import annotations

import asyncio
import logging

from strongroom.adapters.webhooks.sender import WebhookSender
from strongroom.ports.driving.health import HealthBoard

logger = logging.getLogger(__name__)


async def run_health_every(health: HealthBoard, interval: float) -> None:
    """Evaluate every backup's health every ``interval`` seconds, forever (cancel the task
    to stop); the first pass at once."""
    while True:
        try:
            await health.evaluate()
        except Exception:
            logger.exception("the health evaluator failed; it runs again next interval")
        await asyncio.sleep(interval)


async def run_webhooks_every(sender: WebhookSender, poll: float) -> None:
    """Send due deliveries, batch after batch while there are any, then look again every
    ``poll`` seconds, forever (cancel the task to stop)."""
    try:
        while True:
            try:
                sent = await sender.send_due()
            except Exception:
                logger.exception("the webhook sender failed; it looks again next interval")
                sent = 0
            if not sent:
                await asyncio.sleep(poll)
    finally:
        sender.close()
