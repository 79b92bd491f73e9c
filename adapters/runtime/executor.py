"""The service executor: claims cloud runs and executes them, a few at a time.

Each run is one task that streams its source into its destination, beside a heartbeat
every quarter of the lease (``heartbeat_every``) that extends the lease, reports the
bytes done so far, and learns of a cancel: then the work is cancelled (a ``pg_dump`` is
killed, the S3 reading stops) and the run is ``cancelled``, within one heartbeat. A
source's failure fails the run with the reader's message (no secret in it); any other
failure with a message that names what failed. ``stop`` releases runs in flight to their
lease: their work is cancelled and nothing more is written, so the lease job requeues
them (their partial uploads aborted) and another executor takes them up.

A heartbeat may meet the run already ended by its own confirm (committed, the work not yet
resumed): once the work is confirming, a lost heartbeat leaves the outcome to the confirm
(which itself fails when the run was really lost) instead of cancelling it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import attrs

from strongroom.adapters.runtime.uploads import StreamedUpload
from strongroom.domain.errors import StrongroomError, UpstreamUnavailableError
from strongroom.domain.runs import Progress, Run, RunState
from strongroom.ports.driven.sources import SourceError, SourceReaders
from strongroom.ports.driving.executions import HeldRun, LostRunError, ServiceRuns

logger = logging.getLogger(__name__)

INTERNAL_FAILURE = "the service failed while executing the run"


@attrs.define
class _Work:
    """What the heartbeat learns of a run's work: bytes written, and whether the work is
    confirming the run."""

    bytes_done: int = 0
    confirming: bool = False


class Executor:
    """Runs at most ``concurrency`` cloud runs at once, looking for queued ones when the
    run signals announce some (a trigger, a scheduled slot, a requeue), at once after a
    run ends, and every ``poll`` seconds in any case (a missed announcement)."""

    def __init__(
        self,
        runs: ServiceRuns,
        readers: SourceReaders,
        *,
        concurrency: int = 2,
        poll: float = 1.0,
        heartbeat_every: float | None = None,
    ) -> None:
        self._runs = runs
        self._readers = readers
        self.concurrency = concurrency
        self.poll = poll
        self.heartbeat_every = (
            heartbeat_every if heartbeat_every is not None else runs.lease.total_seconds() / 4
        )
        self._active: set[asyncio.Task[Run | None]] = set()
        self._wake = asyncio.Event()

    @property
    def active(self) -> int:
        """Runs in flight."""
        return len(self._active)

    def wake(self) -> None:
        """Look for queued runs now (a wake-up port calls this)."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and execute runs until ``stop`` is set; then release those in flight."""
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                # The ticket is taken before the look: a run queued between the look and
                # the wait still wakes it.
                ticket = self._runs.wakeup()
                try:
                    if len(self._active) < self.concurrency and await self._claim_one():
                        continue
                    self._wake.clear()
                    waking = asyncio.ensure_future(self._wake.wait())
                    announced = asyncio.ensure_future(ticket.wait(self.poll))
                    waits: set[asyncio.Future[Any]] = {stopping, waking, announced}
                    await asyncio.wait(
                        waits | self._active, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED
                    )
                    waking.cancel()
                    announced.cancel()
                finally:
                    ticket.close()
        finally:
            stopping.cancel()
            await self.release()

    async def _claim_one(self) -> bool:
        try:
            held = await self._runs.claim()
        except Exception:
            logger.exception("executor: claiming a cloud run failed; trying again")
            return False
        if held is None:
            return False
        task = asyncio.create_task(self.execute(held), name=f"run-{held.run.id}")
        self._active.add(task)
        task.add_done_callback(self._active.discard)
        return True

    async def release(self) -> None:
        """Cancel the runs in flight and wait for them to unwind; their leases run out."""
        for task in list(self._active):
            task.cancel()
        if self._active:
            await asyncio.wait(list(self._active))

    async def execute(self, held: HeldRun) -> Run | None:
        """Execute one claimed run to its end: the run as it ended, or None when it was
        lost (requeued elsewhere) or released."""
        logger.info("executor: run %s of backup %s started", held.run.id, held.run.backup_id)
        state = _Work()
        work = asyncio.ensure_future(self._work(held, state))
        try:
            while True:
                done, _ = await asyncio.wait({work}, timeout=self.heartbeat_every)
                if done:
                    break
                try:
                    beaten = await self._runs.heartbeat(held, Progress(state.bytes_done))
                except LostRunError:
                    if work.done() or state.confirming:
                        # Ended by its confirm, or the confirm tells (lost, it fails too).
                        await asyncio.wait({work})
                        break
                    logger.warning("executor: run %s was lost (its lease ran out)", held.run.id)
                    await _cancelled(work)
                    return None
                except Exception:
                    logger.exception("executor: a heartbeat of run %s failed", held.run.id)
                    continue
                if beaten.state is RunState.CANCELLED:
                    await _cancelled(work)
                    logger.info("executor: run %s cancelled", held.run.id)
                    return beaten
        except asyncio.CancelledError:
            await _cancelled(work)
            logger.info("executor: run %s released to its lease", held.run.id)
            raise
        return await self._ended(held, work)

    async def _ended(self, held: HeldRun, work: asyncio.Future[Run]) -> Run | None:
        error = work.exception()
        if error is None:
            finished = work.result()
            logger.info("executor: run %s %s", held.run.id, finished.state.value)
            return finished
        if isinstance(error, LostRunError):
            logger.warning("executor: run %s was lost (its lease ran out)", held.run.id)
            return None
        if isinstance(error, SourceError):
            message = error.message
        elif isinstance(error, UpstreamUnavailableError):
            message = f"destination: {error.message}"
        elif isinstance(error, StrongroomError):
            message = error.message
        else:
            logger.error("executor: run %s failed", held.run.id, exc_info=error)
            message = INTERNAL_FAILURE
        logger.info("executor: run %s failed: %s", held.run.id, message)
        try:
            return await self._runs.fail(held, message)
        except LostRunError:
            return None

    async def _work(self, held: HeldRun, state: _Work) -> Run:
        artifact, storage = await self._runs.open_artifact(held)

        async def started(upload_id: str) -> None:
            await self._runs.upload_started(held, artifact, upload_id)

        upload = StreamedUpload(storage, artifact.object_key, started)
        stream = self._runs.read_source(held, self._readers)
        try:
            async for chunk in stream:
                await upload.write(chunk)
                state.bytes_done = upload.size
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        size, sha256 = await upload.finish()
        manifest = getattr(stream, "manifest", None)  # a dump's tables, for restore drills
        if manifest is not None:
            await self._runs.record_manifest(artifact, manifest)
        state.confirming = True
        return await self._runs.finish(held, artifact, size, sha256)


async def _cancelled(work: asyncio.Future[Run]) -> None:
    """Cancel the work and wait until it has unwound (its reader closed)."""
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await work
