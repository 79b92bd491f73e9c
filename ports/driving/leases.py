"""The lease job (contract 11): a claimed run whose lease ran out goes back to the queue
with ``attempt + 1`` (its pending uploads aborted), or fails with ``"lease expired"``
after the last attempt; a run whose cancel was requested is cancelled instead. A manual
run (no lease) left ``running`` with pending uploads for a day is failed ``"abandoned"``
and its uploads aborted, which releases the storage they reserved (contract 13).

Each run is its own unit of work, audited as ``system`` (``run.requeue``, ``run.fail`` or
``run.cancel``); a failure on one run is logged and the job goes on with the next.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from uuid import UUID

import attrs

from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.errors import StrongroomError
from strongroom.domain.events import changed
from strongroom.domain.runs import ABANDON_AFTER, Run, RunState
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_run
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

# Expired leases looked at per run of the job.
BATCH = 1_000
ACTIONS = {
    RunState.QUEUED: "run.requeue",
    RunState.FAILED: "run.fail",
    RunState.CANCELLED: "run.cancel",
}
# Ends one run (workspace id, run id, now): the report's count it adds to, or None.
EndOne = Callable[[UUID, UUID, datetime], Awaitable[str | None]]
# The report's count each new state of an expired lease adds to.
COUNTED = {
    RunState.QUEUED: "requeued",
    RunState.FAILED: "failed",
    RunState.CANCELLED: "cancelled",
}


@attrs.frozen
class LeaseReport:
    """What one run of the job did."""

    requeued: int = 0
    failed: int = 0
    cancelled: int = 0
    abandoned: int = 0
    errors: int = 0


class Leases:
    """The lease job, run inside ``serve`` on an interval."""

    def __init__(self, deps: Dependencies, artifacts: Artifacts) -> None:
        self._deps = deps
        self._artifacts = artifacts

    async def expire(self, now: datetime | None = None) -> LeaseReport:
        """Requeue, fail or cancel every running run whose lease ran out by ``now``; fail
        the manual runs left with pending uploads (``abandon``)."""
        now = now or self._deps.clock.now()
        async with self._deps.uow() as uow:
            expired = await uow.runs.lease_expired(now, BATCH)
            left = await uow.runs.left_manual(now - ABANDON_AFTER, BATCH)
        counts = dict.fromkeys(("requeued", "failed", "cancelled", "abandoned", "errors"), 0)
        jobs: list[tuple[list[Run], EndOne, str]] = [
            (expired, self._expire, "could not expire the lease of run %s"),
            (left, self._abandon, "could not end the abandoned run %s"),
        ]
        for candidates, end, failure in jobs:
            for candidate in candidates:
                try:
                    counted = await end(candidate.workspace_id, candidate.id, now)
                except StrongroomError:
                    logger.exception(failure, candidate.id)
                    counts["errors"] += 1
                    continue
                if counted is not None:
                    counts[counted] += 1
        report = LeaseReport(**counts)
        if expired or left:
            logger.info("leases: %s", report)
        return report

    async def _expire(self, workspace_id: UUID, run_id: UUID, now: datetime) -> str | None:
        """Expire one run's lease; what it became (``requeued``, ``failed`` or
        ``cancelled``), or None when it no longer needed it."""
        async with self._deps.uow() as uow:
            run = await uow.runs.get(workspace_id, run_id, for_update=True)
            if run is None or run.state is not RunState.RUNNING or not run.lease_expired(now):
                return None  # a heartbeat, a confirm or another expiry came first
            after = run.expire_lease(now)
            await self._end(uow, run, after, keep=after.state is RunState.QUEUED)
            if after.state is RunState.QUEUED:
                await uow.runs.announce_queued(workspace_id, run.worker_id)
            await uow.commit()
        if after.state is RunState.QUEUED:
            self._deps.signals.announce(workspace_id, run.worker_id)
        return COUNTED[after.state]

    async def _abandon(self, workspace_id: UUID, run_id: UUID, now: datetime) -> str | None:
        """End one manual run its client left, its pending uploads aborted (their partial
        objects removed, their records ``deleted``, so their bytes count no more):
        ``abandoned``, or None when an announcement, a confirm or a fail came first."""
        async with self._deps.uow() as uow:
            run = await uow.runs.get(workspace_id, run_id, for_update=True)
            if run is None:
                return None
            artifacts = await uow.artifacts.list_for_run(workspace_id, run_id)
            announced = [a.created_at for a in artifacts if a.state is ArtifactState.PENDING]
            last = max(announced, default=None)
            if not run.left_since(last, now):
                return None
            await self._end(uow, run, run.abandon(last, now), keep=False)
            await uow.commit()
        return "abandoned"

    async def _end(self, uow: UnitOfWork, run: Run, after: Run, keep: bool) -> None:
        """Store the run's new state, abort its pending uploads (``keep``: their records
        stay, for the next attempt), notify and audit it."""
        await uow.runs.update(after)
        await self._artifacts.abort_pending(uow, after, keep=keep)
        await notify_run(self._deps, uow, after)
        uow.collect(
            by_system(self._deps, run.workspace_id, changed(ACTIONS[after.state], run, after))
        )
