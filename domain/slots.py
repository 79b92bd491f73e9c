"""Schedule slots (contract 11): when a cron expression in an IANA time zone fires.

A slot is a UTC instant. The cron expression is matched against local wall-clock times;
each matching wall-clock time gives one slot:

- a wall-clock time that exists once is its instant;
- a wall-clock time skipped by a DST change (spring forward) runs at the next valid
  minute, the end of the gap, so every skipped time of one gap gives that one slot;
- a wall-clock time repeated by a DST change (fall back) runs once, at its first
  occurrence.

After downtime the missed slots give one run: the due slot is run (or skipped) once and
the next ``next_run_at`` is the first slot after now, never a slot already in the past.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta

from croniter import croniter

_MINUTE = timedelta(minutes=1)


def _exists(wall: datetime, zone: zoneinfo.ZoneInfo) -> bool:
    """Whether the naive local ``wall`` time is read on a clock in ``zone`` at all."""
    there_and_back = wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)
    return there_and_back.replace(tzinfo=None) == wall


def slot_of(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The UTC instant a matching naive local ``wall`` time runs at: its first occurrence,
    or the next valid minute when a DST change skips it."""
    valid = wall
    while not _exists(valid, zone):
        valid = valid.replace(second=0, microsecond=0) + _MINUTE
    # fold=0 is the first occurrence of a repeated wall-clock time.
    return valid.replace(tzinfo=zone, fold=0).astimezone(UTC)


def next_slot(cron: str, timezone: str, after: datetime) -> datetime:
    """The first slot of ``cron`` in ``timezone`` strictly after the instant ``after``, in
    UTC (the expression is assumed valid: ``Schedule`` checks it)."""
    zone = zoneinfo.ZoneInfo(timezone)
    wall_after = after.astimezone(zone).replace(tzinfo=None)
    walls = croniter(cron, wall_after)
    while True:
        # Matching wall-clock times come in order and their slots never go backwards, so
        # the first slot after ``after`` is the answer; the ones skipped here are first
        # occurrences of a repeated hour that already passed.
        slot = slot_of(walls.get_next(datetime), zone)
        if slot > after:
            return slot


def due_slot(next_run_at: datetime | None, now: datetime) -> datetime | None:
    """The slot that is due at ``now``: ``next_run_at`` once it is no longer in the future.

    However long ago it was, it is one slot: the slots missed since are not run (no burst
    after downtime)."""
    if next_run_at is None or next_run_at > now:
        return None
    return next_run_at
