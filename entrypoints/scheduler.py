"""``strongroom scheduler``: the scheduler alone, without the HTTP API (contract 11).

Any number of these (and of ``serve`` processes, which run the scheduler too) may run on
one database: each schedule slot gives exactly one run. SIGTERM or SIGINT stops it
cleanly: the tick in progress finishes its current slot's unit of work or rolls it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from strongroom.entrypoints.service import describe_storage, open_facade, run_scheduler_every
from strongroom.entrypoints.settings import Settings

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def run_scheduler(settings: Settings) -> None:
    """Run the scheduler every ``STRONGROOM_SCHEDULER_INTERVAL`` seconds (5 when that
    setting is 0, which turns it off only inside ``serve``) until SIGTERM or SIGINT."""
    interval = settings.scheduler_interval or Settings().scheduler_interval
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in STOP_SIGNALS:
        loop.add_signal_handler(number, stop.set)
    try:
        async with open_facade(settings) as facade:
            logger.info(
                "scheduler running every %s s (state %s)", interval, describe_storage(settings)
            )
            job = asyncio.create_task(run_scheduler_every(facade, interval), name="scheduler")
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({job, stopping}, return_when=asyncio.FIRST_COMPLETED)
            job.cancel()
            stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await job
            logger.info("scheduler stopped")
    finally:
        for number in STOP_SIGNALS:
            loop.remove_signal_handler(number)
