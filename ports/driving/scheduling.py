"""The scheduler (contract 11): every scheduled backup gets one ``queued`` run with
``trigger: "schedule"`` at each slot, or the slot is skipped (``run.skip``, for billing or
an overlapping run); either way its ``next_run_at`` moves to the first slot after now.

Due backups are found through the index on ``next_run_at`` (at most ``BATCH`` a look), so
a tick costs what is due, not what exists. Each slot is its own unit of work, which starts
with a compare-and-set of the backup's ``next_run_at`` from the slot to the next one:
whatever the number of scheduler instances on one database, exactly one of them moves it,
and only that one queues the run (or records the skip) in the same transaction. The others
change nothing and count the slot as ``taken``.
"""

from __future__ import annotations

import logging
from datetime import datetime

import attrs

from strongroom.domain.audit import diff
from strongroom.domain.backups import Backup
from strongroom.domain.errors import StrongroomError
from strongroom.domain.events import Recorded, created
from strongroom.domain.runs import Run, RunTrigger
from strongroom.domain.schedules import NotDue, ScheduleRun, Skip, decide_slot
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

# Due backups looked at per look; a full batch makes the caller look again at once.
BATCH = 500


@attrs.frozen
class SchedulerReport:
    """What one tick of the scheduler did."""

    scheduled: int = 0
    skipped: int = 0
    # Slots another scheduler instance (or a change of the backup) took first.
    taken: int = 0
    errors: int = 0
    # The look was a full batch: more backups may be due now.
    more: bool = False


class Scheduler:
    """The scheduler job, run inside ``serve`` (or alone as ``strongroom scheduler``) on an
    interval; any number of instances may run on one database."""

    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps

    async def tick(self, now: datetime | None = None, batch: int = BATCH) -> SchedulerReport:
        """Queue (or skip) the due slot of every backup due at ``now`` (at most ``batch``
        of them, soonest first)."""
        now = now or self._deps.clock.now()
        async with self._deps.uow() as uow:
            due = await uow.backups.due(now, batch)
        counts = {"scheduled": 0, "skipped": 0, "taken": 0, "errors": 0}
        for backup in due:
            try:
                outcome = await self._slot(backup, now)
            except StrongroomError:
                logger.exception("could not schedule backup %s", backup.id)
                counts["errors"] += 1
                continue
            counts[outcome] += 1
        report = SchedulerReport(**counts, more=len(due) >= batch)
        if due:
            logger.info("scheduler: %s", report)
        return report

    async def run_due(self, now: datetime | None = None, batch: int = BATCH) -> SchedulerReport:
        """``tick`` until no full batch is left: everything due at ``now`` handled (a slot
        that keeps failing is left for the next interval)."""
        total = SchedulerReport()
        while True:
            report = await self.tick(now, batch)
            total = SchedulerReport(
                scheduled=total.scheduled + report.scheduled,
                skipped=total.skipped + report.skipped,
                taken=total.taken + report.taken,
                errors=total.errors + report.errors,
            )
            # Errors or slots taken by others may leave the batch full of the same rows.
            if not report.more or report.scheduled + report.skipped == 0:
                return total

    async def _slot(self, seen: Backup, now: datetime) -> str:
        """Handle one due backup: ``scheduled``, ``skipped`` or ``taken``."""
        slot = seen.next_run_at
        if slot is None or seen.schedule is None:
            return "taken"
        following = seen.schedule.next_after(now)
        workspace_id = seen.workspace_id
        async with self._deps.uow() as uow:
            # The compare-and-set comes first: it locks the backup, so a concurrent trigger,
            # change or scheduler waits, and the reads below see what this slot decides on.
            if not await uow.backups.advance_schedule(workspace_id, seen.id, slot, following):
                return "taken"
            backup = await uow.backups.get(workspace_id, seen.id)
            workspace = await uow.workspaces.get(workspace_id)
            if backup is None or workspace is None:
                return "taken"
            has_open = await uow.runs.has_open(workspace_id, backup.id)
            decision = decide_slot(
                attrs.evolve(backup, next_run_at=slot), now, workspace.billing_state, has_open
            )
            if isinstance(decision, NotDue):
                return "taken"  # no longer scheduled; rolled back with the unit
            outcome = await self._apply(uow, backup, decision, now)
            await uow.commit()
        if outcome == "scheduled":
            self._deps.signals.announce(workspace_id, backup.worker_id)
        return outcome

    async def _apply(
        self, uow: UnitOfWork, backup: Backup, decision: ScheduleRun | Skip, now: datetime
    ) -> str:
        """Queue the slot's run (audited ``run.schedule``), or record its skip
        (``run.skip`` with ``changes.reason``), in ``uow``; both by ``system``."""
        slot = decision.slot.isoformat()
        if isinstance(decision, Skip):
            changes = diff({}, {"backup_id": str(backup.id), "reason": decision.reason.value})
            changes |= diff({}, {"slot": slot})
            skipped = Recorded("run.skip", backup.id, changes, target_type="backup")
            uow.collect(by_system(self._deps, backup.workspace_id, skipped))
            return "skipped"
        run = Run.queued(self._deps.ids.new_id(), backup, RunTrigger.SCHEDULE, now)
        await uow.runs.add(run)
        uow.collect(
            by_system(self._deps, backup.workspace_id, created("run.schedule", run, slot=slot))
        )
        await uow.runs.announce_queued(backup.workspace_id, run.worker_id)
        return "scheduled"
