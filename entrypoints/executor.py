"""The service executor as a runnable: inside ``strongroom serve``, or alone as
``strongroom executor`` (contract 11).

It claims queued cloud runs (``STRONGROOM_EXECUTORS`` at once, default 2; a look every
``STRONGROOM_EXECUTOR_POLL`` seconds, default 1) and executes them with leases of
``STRONGROOM_EXECUTOR_LEASE`` seconds (default 60, a heartbeat every quarter of it). SIGTERM
or SIGINT stops it cleanly: no new claim, and the runs in flight are released to their
lease (their work stops, nothing more is written; the lease job of a ``serve`` requeues
them and aborts their partial uploads, and an executor takes them up again). Alone, it also
runs queued restores every ``STRONGROOM_RESTORE_POLL`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from strongroom.adapters.runtime.restores import RestoreRunner
from strongroom.entrypoints.service import executor_for, open_facade, run_restores_every
from strongroom.entrypoints.settings import Settings

logger = logging.getLogger(__name__)


async def run_executor(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """``strongroom executor``: execute cloud runs until SIGTERM or SIGINT (or ``stop``)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for number in signals:
        loop.add_signal_handler(number, stop.set)
    try:
        async with open_facade(settings) as facade:
            executor = executor_for(facade, settings)
            logger.info(
                "executor: running up to %d cloud runs at once", max(1, executor.concurrency)
            )
            executor.concurrency = max(1, executor.concurrency)
            restores = (
                asyncio.create_task(
                    run_restores_every(
                        RestoreRunner(facade.restores),
                        settings.restore_poll,
                        settings.executor_lease,
                    )
                )
                if settings.restore_poll > 0
                else None
            )
            try:
                await executor.run(stop)
            finally:
                if restores is not None:
                    restores.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await restores
            logger.info("executor: stopped")
    finally:
        for number in signals:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(number)
