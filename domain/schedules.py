"""What the scheduler does with a backup whose slot came (contract 11): a ``queued`` run,
or a skip for billing or an overlapping run. When slots come is ``slots``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from strongroom.domain.backups import Backup
from strongroom.domain.billing import BillingState, GatedOperation, is_allowed
from strongroom.domain.slots import due_slot, next_slot, slot_of

__all__ = [
    "NotDue",
    "ScheduleRun",
    "Skip",
    "SkipReason",
    "SlotDecision",
    "decide_slot",
    "due_slot",
    "next_slot",
    "slot_of",
]


class SkipReason(StrEnum):
    """Why a due slot gives no run (``changes.reason`` of the ``run.skip`` audit event)."""

    BILLING = "billing"
    OVERLAP = "overlap"


@attrs.frozen
class ScheduleRun:
    """The slot gives a ``queued`` run with ``trigger: "schedule"``; the backup's
    ``next_run_at`` becomes ``next_run_at``."""

    slot: datetime
    next_run_at: datetime


@attrs.frozen
class Skip:
    """The slot gives no run, for ``reason`` (audited as ``run.skip``); the backup's
    ``next_run_at`` still becomes ``next_run_at``."""

    slot: datetime
    next_run_at: datetime
    reason: SkipReason


@attrs.frozen
class NotDue:
    """Nothing to do: no slot has come, or the backup is not scheduled."""


SlotDecision = ScheduleRun | Skip | NotDue


def decide_slot(
    backup: Backup, now: datetime, billing: BillingState, has_open_run: bool
) -> SlotDecision:
    """What the scheduler does with ``backup`` at ``now``, given its workspace's billing
    state and whether the backup has a ``queued`` or ``running`` run.

    A backup that is not scheduled (a draft, paused, or without schedule) is never due.
    When both billing and an open run would skip the slot, the reason is ``billing``.
    """
    slot = due_slot(backup.next_run_at, now)
    if slot is None or not backup.is_scheduled or backup.schedule is None:
        return NotDue()
    following = backup.schedule.next_after(now)
    if not is_allowed(billing, GatedOperation.NEW_RUN):
        return Skip(slot, following, SkipReason.BILLING)
    if has_open_run:
        return Skip(slot, following, SkipReason.OVERLAP)
    return ScheduleRun(slot, following)
