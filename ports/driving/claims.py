"""The worker protocol (contract 11): claim a queued run, heartbeat it, report its failure."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.backups import Backup
from strongroom.domain.errors import ForbiddenError, NotFoundError
from strongroom.domain.events import changed
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Progress, Run, RunTrigger, check_claim_wait
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driving.access import Access, Bearer, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.changes import WorkspaceChange, changing
from strongroom.ports.driving.coalescing import Coalesced
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_run

CLAIM_RUN = Requirement((Permission.ARTIFACTS_UPLOAD,), "run.claim")
HEARTBEAT_RUN = Requirement((Permission.ARTIFACTS_UPLOAD,))
FAIL_RUN = Requirement((Permission.ARTIFACTS_UPLOAD,), "run.fail")
CLAIM_REFUSAL = "only a worker can claim runs; persons and API keys cannot"
# How often a process re-checks, in one statement for all its waiting claims, whether a
# run was queued for one of them without its wake-up reaching it (a notification lost with
# the listening connection, an earlier version's, a backup assigned to a waiting worker):
# the safety net under the ``RunSignals`` wake-ups. A waiting claim never looks on its own.
SWEEP_SECONDS = 5.0
# How close to its deadline a waiting claim stops waiting (an event loop's timer may fire
# up to its resolution early: uvloop's are whole milliseconds).
TIMER_SLACK = 0.01

logger = logging.getLogger(__name__)
# A waiting claim's key: its workspace and worker.
Waiter = tuple[UUID, UUID]


@attrs.frozen
class ClaimedRun:
    """A claimed run with its backup (what the worker needs to execute it)."""

    run: Run
    backup: Backup


def ensure_worker(caller: Caller) -> UUID:
    """The calling worker; a person or an API key is refused (403 ``forbidden``)."""
    if caller.worker_id is None:
        raise ForbiddenError(CLAIM_REFUSAL)
    return caller.worker_id


class Claims:
    """Claim, heartbeat and fail: the calls of the worker holding a run."""

    def __init__(self, deps: Dependencies, access: Access, artifacts: Artifacts) -> None:
        self._deps = deps
        self._access = access
        self._artifacts = artifacts
        self._stopping = False
        self._guard = threading.Lock()
        # The tickets of the claims waiting in this process, by workspace and worker.
        self._waiting: dict[Waiter, set[Wakeup]] = {}
        self._last_recheck = float("-inf")
        # The waiting claim that makes the re-check (``_wait``), if any waits.
        self._sweeper: Wakeup | None = None
        # The looks of claims that may wait, in batches of those that come together.
        self._looks: Coalesced[Waiter, bool] = Coalesced(self._queued_among)

    def stop_waiting(self) -> None:
        """The process is stopping: every waiting claim looks once more and answers (204
        when nothing is queued) instead of waiting out its ``wait_seconds``, and later
        claims do not wait. Callable from any thread."""
        with self._guard:
            self._stopping = True
            tickets = [ticket for waiting in self._waiting.values() for ticket in waiting]
        for ticket in tickets:
            ticket.wake()

    def waiting(self) -> int:
        """How many claims wait in this process."""
        with self._guard:
            return sum(len(tickets) for tickets in self._waiting.values())

    async def claim(
        self,
        who: Bearer | Caller | Grant,
        wait_seconds: int | Callable[[], int] = 0,
        still_there: Callable[[], Awaitable[bool]] | None = None,
    ) -> ClaimedRun | None:
        """``POST /v1/claims``: the oldest queued run of a backup assigned to the calling
        worker, now ``running`` with a lease; None when none is queued within
        ``wait_seconds``. Each look is its own unit of work, so a waiting claim holds no
        database connection: between looks it waits for a wake-up of its worker
        (``RunSignals``, or this process's re-check every ``SWEEP_SECONDS``). Never
        refused for billing; audited as ``run.claim``.

        The checks come in the contract's order: the credential (401), a worker's only
        (403 for persons and API keys), then ``wait_seconds`` (400; a callable parses
        the request's body only then).

        A claim that may wait looks in a batch with the other claims of its process that
        look at the same time (one statement for all, as their credentials are checked in
        one), and takes a transaction only when its worker has a queued run: arrivals of
        thousands of long polls take one pooled connection, not one each. A bearer's
        credential is checked again before a claim after a wait: one revoked meanwhile
        claims nothing (401).

        ``still_there`` says whether the claimer can still be answered (its connection is
        open), asked before each claim (of a run a look found, or of a claim that does
        not wait) and after it: a claimer gone claims nothing, and a run claimed for a
        claimer found gone afterwards is released at once (``_release``), not left
        ``running`` until its lease ends. A claimer gone while it waits is noticed at its
        next wake-up or at its deadline (asking is not free: thousands wait)."""
        caller = await self._caller(who)
        worker_id = ensure_worker(caller)
        wait = check_claim_wait(wait_seconds() if callable(wait_seconds) else wait_seconds)
        caller, workspace_id = await self._access.resolve(
            who if isinstance(who, Grant) else caller, CLAIM_RUN
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        looked = False
        while True:
            # The ticket is taken before the look: a run queued between the look and the
            # wait still wakes this claim.
            wakeup = self._deps.signals.watch(workspace_id, worker_id) if wait else None
            try:
                # A claim that may wait looks first, in a batch with the looks of the
                # other claims of its process (one statement between them): most find
                # nothing and then wait, holding nothing; only one that finds a run takes
                # a transaction to claim it, if its claimer is still there.
                claimed = None
                if wakeup is None or await self._looks.ask((workspace_id, worker_id)):
                    if still_there is not None and not await still_there():
                        return None
                    if looked and isinstance(who, Bearer):
                        # Revoked while it waited (rotated, deleted): 401, nothing claimed.
                        await self._caller(who)
                    claimed = await self._claim_once(caller, workspace_id, worker_id)
                looked = True
                if claimed is not None and still_there is not None and not await still_there():
                    await self._release(caller, workspace_id, claimed.run)
                    return None
                remaining = deadline - loop.time()
                if wakeup is None or claimed is not None or remaining <= TIMER_SLACK:
                    return claimed
                if not await self._wait((workspace_id, worker_id), wakeup, remaining):
                    # The deadline, without a wake-up: nothing was announced for this
                    # worker (a lost announcement is the re-check's, or the next poll's,
                    # first look); or stopping: looked once more just now.
                    return None
            finally:
                if wakeup is not None:
                    wakeup.close()

    async def _release(self, caller: Caller, workspace_id: UUID, claimed: Run) -> None:
        """Hand ``claimed`` back to the queue, same attempt, if it is still as claimed;
        audited as ``run.requeue``. Claims waiting for the workspace are woken."""
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            found = await uow.runs.get(workspace_id, claimed.id, for_update=True)
            if found != claimed:
                return  # changed meanwhile (cancelled, say): the change stands
            released = claimed.release()
            await uow.runs.update(released)
            await uow.runs.announce_queued(workspace_id, claimed.worker_id)
            change.collect(changed("run.requeue", claimed, released))
        self._deps.signals.announce(workspace_id, claimed.worker_id)

    async def _caller(self, who: Bearer | Caller | Grant) -> Caller:
        """Who calls: a bearer authenticated now (401 ``unauthenticated`` otherwise)."""
        if isinstance(who, Bearer):
            return await self._access.authenticate(who.token, who.request_id)
        return who.caller if isinstance(who, Grant) else who

    async def _wait(self, waiter: Waiter, wakeup: Wakeup, timeout: float) -> bool:
        """Until the wake-up, ``timeout``, the re-check finding a run for ``waiter``, or
        ``stop_waiting``: whether it was woken (False at the deadline, and without waiting
        when the process is stopping). Within ``TIMER_SLACK`` of the deadline counts as
        the deadline: an event loop's timers may fire that much early, and waiting again
        for what is left would spin.

        One waiting claim of the process at a time, the sweeper, wakes every
        ``SWEEP_SECONDS`` to make the re-check; the others sleep until their wake-up or
        deadline (10 000 claims waking every 5 s were 2 000 wake-ups a second). A sweeper
        that stops waiting wakes another waiting claim, which looks once more and takes
        the role."""
        with self._guard:
            if self._stopping:
                return False
            self._waiting.setdefault(waiter, set()).add(wakeup)
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        woken = False
        try:
            while (left := end - loop.time()) > TIMER_SLACK:
                with self._guard:
                    if self._sweeper is None:
                        self._sweeper = wakeup
                    sweeping = self._sweeper is wakeup
                if await wakeup.wait(min(left, SWEEP_SECONDS) if sweeping else left):
                    woken = True
                    break
                if sweeping:
                    await self._recheck_if_due(loop.time())
        finally:
            successor = None
            with self._guard:
                tickets = self._waiting.get(waiter)
                if tickets is not None:
                    tickets.discard(wakeup)
                    if not tickets:
                        del self._waiting[waiter]
                if self._sweeper is wakeup:
                    self._sweeper = None
                    successor = next(iter(next(iter(self._waiting.values()), ())), None)
            if successor is not None:
                successor.wake()
        return woken

    async def _recheck_if_due(self, now: float) -> None:
        """At most once every ``SWEEP_SECONDS`` per process, done by whichever waiting
        claim gets here first (no task of its own): one statement finds which of the
        waiting workers have a queued run, and wakes their claims (which then look)."""
        with self._guard:
            if now - self._last_recheck < SWEEP_SECONDS or not self._waiting:
                return
            self._last_recheck = now
            waiting = list(self._waiting)
        try:
            async with self._deps.uow() as uow:
                found = await uow.runs.workers_with_queued(waiting)
        except Exception as error:  # the database is away: the next round tries again
            logger.warning("re-check of waiting claims failed (%s); trying again", error)
            return
        with self._guard:
            due = [ticket for waiter in found for ticket in self._waiting.get(waiter, ())]
        for ticket in due:
            ticket.wake()

    async def _queued_among(self, waiters: Sequence[Waiter]) -> dict[Waiter, bool]:
        """Which of ``waiters`` have a queued run (True), in one statement."""
        async with self._deps.uow() as uow:
            found = await uow.runs.workers_with_queued(waiters)
        return dict.fromkeys(found, True)

    async def _claim_once(
        self, caller: Caller, workspace_id: UUID, worker_id: UUID
    ) -> ClaimedRun | None:
        """The worker's oldest queued run claimed, in one unit of work; None (rolled back,
        nothing written) when there is none."""
        async with self._deps.uow() as uow:
            found = await uow.runs.next_queued(workspace_id, worker_id)
            if found is None:
                return None
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            claimed = found.claim(worker_id, self._deps.clock.now())
            await uow.runs.update(claimed)
            backup = await lookups.backup(uow, workspace_id, claimed.backup_id)
            change.collect(changed("run.claim", found, claimed))
            await uow.commit()
        return ClaimedRun(claimed, backup)

    async def heartbeat(
        self, caller: Caller | Grant, run_id: UUID, progress: Progress | None = None
    ) -> Run:
        """``POST /v1/runs/{id}/heartbeat``: the lease of the caller's run extended (and
        ``progress`` recorded); a run whose cancel was requested becomes ``cancelled``.
        A run the caller does not hold is 404; a finished one 409 ``invalid_state``."""
        caller, workspace_id = await self._access.resolve(caller, HEARTBEAT_RUN)
        async with self._deps.uow() as uow:
            found = await uow.runs.get(workspace_id, run_id, for_update=True)
            if found is None or not found.held_by(caller.worker_id):
                raise NotFoundError("run")
            beaten = found.heartbeat(self._deps.clock.now(), progress)
            await uow.runs.update(beaten)
            await uow.commit()
        return beaten

    async def fail(self, caller: Caller | Grant, run_id: UUID, error: str) -> Run:
        """``POST /v1/runs/{id}/fail``: the run ``failed`` with ``error`` (``cancelled`` when
        its cancel was requested), its pending artifacts aborted. Only the worker holding
        the run, or the client of a manual run; anyone else: 404. Audited as ``run.fail``."""
        caller, workspace_id = await self._access.resolve(caller, FAIL_RUN, target_id=run_id)
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            found = await uow.runs.get(workspace_id, run_id, for_update=True)
            run = await lookups.visible_run(caller, uow, workspace_id, found)
            if run.trigger is not RunTrigger.MANUAL and not run.held_by(caller.worker_id):
                raise NotFoundError("run")
            failed = run.fail(error, self._deps.clock.now())
            await uow.runs.update(failed)
            await self._artifacts.abort_pending(uow, failed)
            await notify_run(self._deps, uow, failed)
            change.collect(changed("run.fail", run, failed))
        return failed
