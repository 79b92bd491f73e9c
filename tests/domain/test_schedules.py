"""Schedule slots and the scheduler's decision (contract 11): a cron expression in an IANA
time zone, DST changes (a skipped local time runs at the next valid minute, a repeated one
runs once), catch-up after downtime without a burst, ``billing`` and ``overlap`` skips."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import attrs
import pytest
from croniter import croniter
from hypothesis import given
from hypothesis import strategies as st

from strategies import DST_TIMEZONES, slot_crons, zoned_instants
from strongroom.domain.backups import Backup, BackupKind, BackupState, Schedule
from strongroom.domain.billing import BillingState
from strongroom.domain.schedules import (
    NotDue,
    ScheduleRun,
    Skip,
    SkipReason,
    decide_slot,
    due_slot,
    next_slot,
)

MINUTE = timedelta(minutes=1)
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def slots_between(cron: str, timezone: str, start: datetime, end: datetime) -> list[datetime]:
    """Every slot in ``(start, end]``, by following ``next_slot``."""
    found = []
    moment = next_slot(cron, timezone, start)
    while moment <= end:
        found.append(moment)
        moment = next_slot(cron, timezone, moment)
    return found


def expected_slots(cron: str, timezone: str, start: datetime, end: datetime) -> list[datetime]:
    """The slots of contract 11 in ``(start, end]``, found minute by minute in UTC (start
    on a whole minute): a minute whose local time matches, the first time that local time
    is read; and the minute a clock jumps forward, when a matching local time is skipped."""
    zone = zoneinfo.ZoneInfo(timezone)
    found = []
    moment = start + MINUTE
    while moment <= end:
        local = moment.astimezone(zone)
        wall = local.replace(tzinfo=None)
        before = (moment - MINUTE).astimezone(zone).replace(tzinfo=None)
        skipped = []
        walked = before + MINUTE
        while walked < wall:  # the local minutes the clock jumped over
            skipped.append(walked)
            walked += MINUTE
        first_reading = local.fold == 0
        if (croniter.match(cron, wall) and first_reading) or any(
            croniter.match(cron, minute) for minute in skipped
        ):
            found.append(moment)
        moment += MINUTE
    return found


def local_wall(moment: datetime, timezone: str) -> datetime:
    """The naive local time ``moment`` reads in ``timezone``."""
    return moment.astimezone(zoneinfo.ZoneInfo(timezone)).replace(tzinfo=None)


class TestSlotProperties:
    @given(slot_crons(), zoned_instants())
    def test_next_slot_is_strictly_after_in_utc(
        self, cron: str, zoned: tuple[str, datetime]
    ) -> None:
        """The next slot lies strictly after the moment and is given in UTC."""
        timezone, after = zoned
        slot = next_slot(cron, timezone, after)
        assert slot > after
        assert slot.utcoffset() == timedelta(0)

    @given(slot_crons(), zoned_instants(), st.integers(0, 6 * 3600))
    def test_next_slot_is_monotonic(
        self, cron: str, zoned: tuple[str, datetime], seconds: int
    ) -> None:
        """A later moment never has an earlier next slot."""
        timezone, first = zoned
        later = first + timedelta(seconds=seconds)
        assert next_slot(cron, timezone, first) <= next_slot(cron, timezone, later)

    @given(slot_crons(), zoned_instants())
    def test_slots_are_exactly_the_contracts(self, cron: str, zoned: tuple[str, datetime]) -> None:
        """Over three hours, the slots are the matching local times read for the first
        time, plus the end of a DST gap that swallowed a matching local time."""
        timezone, start = zoned
        start = start.replace(second=0)
        end = start + timedelta(hours=3)
        assert slots_between(cron, timezone, start, end) == expected_slots(
            cron, timezone, start, end
        )

    @given(slot_crons(), zoned_instants())
    def test_no_slot_in_a_skipped_local_time(self, cron: str, zoned: tuple[str, datetime]) -> None:
        """A slot reads a local time that matches the cron, or is the minute a clock
        jumped forward to (the next valid minute after a skipped match)."""
        timezone, start = zoned
        zone = zoneinfo.ZoneInfo(timezone)
        for slot in slots_between(cron, timezone, start, start + timedelta(hours=3)):
            jumped = (
                slot.astimezone(zone).utcoffset() != (slot - MINUTE).astimezone(zone).utcoffset()
                and local_wall(slot, timezone) - local_wall(slot - MINUTE, timezone) > MINUTE
            )
            assert croniter.match(cron, local_wall(slot, timezone)) or jumped

    @given(slot_crons(), zoned_instants())
    def test_a_repeated_local_time_gives_one_slot(
        self, cron: str, zoned: tuple[str, datetime]
    ) -> None:
        """No two slots read the same local time, even across a clock set back."""
        timezone, start = zoned
        walls = [
            local_wall(slot, timezone)
            for slot in slots_between(cron, timezone, start, start + timedelta(hours=3))
        ]
        assert len(walls) == len(set(walls))


DST_DAYS = [
    pytest.param(
        "30 2 * * *",
        "Europe/Berlin",
        datetime(2026, 3, 28, 12, tzinfo=UTC),
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        id="berlin-02:30-skipped-runs-at-03:00",
    ),
    pytest.param(
        "*/15 2 * * *",
        "Europe/Berlin",
        datetime(2026, 3, 28, 12, tzinfo=UTC),
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"],
        id="berlin-skipped-hour-runs-once-at-its-end",
    ),
    pytest.param(
        "30 2 * * *",
        "Europe/Berlin",
        datetime(2026, 10, 24, 12, tzinfo=UTC),
        ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        id="berlin-02:30-repeated-runs-once",
    ),
    pytest.param(
        "*/20 * * * *",
        "Europe/Berlin",
        datetime(2026, 10, 24, 23, 59, tzinfo=UTC),
        [
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:20:00+02:00",
            "2026-10-25T02:40:00+02:00",
            "2026-10-25T03:00:00+01:00",  # the second 02:xx has no slot
        ],
        id="berlin-repeated-hour-runs-its-slots-once",
    ),
    pytest.param(
        "30 1 * * *",
        "America/New_York",
        datetime(2026, 10, 31, 12, tzinfo=UTC),
        ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"],
        id="new-york-01:30-repeated-runs-once",
    ),
    pytest.param(
        "15 2 * * *",
        "Australia/Lord_Howe",
        datetime(2026, 10, 3, tzinfo=UTC),
        ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"],
        id="lord-howe-half-hour-gap",
    ),
]


class TestDstDays:
    @pytest.mark.parametrize(("cron", "timezone", "start", "expected"), DST_DAYS)
    def test_the_first_slots_after(
        self, cron: str, timezone: str, start: datetime, expected: list[str]
    ) -> None:
        """The first slots after ``start`` read these local times: a skipped one at the
        next valid minute, a repeated one once, at its first reading."""
        zone = zoneinfo.ZoneInfo(timezone)
        slots = [next_slot(cron, timezone, start)]
        while len(slots) < len(expected):
            slots.append(next_slot(cron, timezone, slots[-1]))
        assert [slot.astimezone(zone).isoformat() for slot in slots] == expected

    def test_schedule_next_after_follows_the_dst_rules(self) -> None:
        """A backup's ``next_run_at`` comes from the same slots."""
        schedule = Schedule("30 2 * * *", "Europe/Berlin")
        moment = datetime(2026, 3, 28, 12, tzinfo=UTC)
        assert schedule.next_after(moment) == datetime(2026, 3, 29, 1, tzinfo=UTC)


def scheduled_backup(cron: str = "0 3 * * *", timezone: str = "UTC") -> Backup:
    """An active, unpaused local backup with a schedule, last changed at ``NOW``."""
    draft = Backup.draft(uuid4(), uuid4(), "Nightly", BackupKind.LOCAL, NOW)
    active = attrs.evolve(
        draft, state=BackupState.ACTIVE, schedule=Schedule(cron, timezone), worker_id=uuid4()
    )
    return active.rescheduled(NOW)


NEW_RUNS_REFUSED = {BillingState.STOPPED, BillingState.BLOCKED}


class TestDecision:
    def test_nothing_is_due_before_the_slot(self) -> None:
        """Before ``next_run_at`` the backup is not due."""
        backup = scheduled_backup()
        assert backup.next_run_at is not None
        early = backup.next_run_at - timedelta(seconds=1)
        assert decide_slot(backup, early, BillingState.ACTIVE, False) == NotDue()
        assert due_slot(backup.next_run_at, early) is None

    @given(st.sampled_from(list(BillingState)), st.booleans(), st.integers(0, 30 * 86_400))
    def test_a_due_slot_runs_or_is_skipped_for_one_reason(
        self, billing: BillingState, has_open_run: bool, late: int
    ) -> None:
        """At or after the slot: ``billing`` when billing refuses new runs, else
        ``overlap`` when a run is queued or running, else a run; the next ``next_run_at``
        is the first slot after now either way."""
        backup = scheduled_backup()
        assert backup.next_run_at is not None
        now = backup.next_run_at + timedelta(seconds=late)
        decision = decide_slot(backup, now, billing, has_open_run)
        following = next_slot("0 3 * * *", "UTC", now)
        if billing in NEW_RUNS_REFUSED:
            assert decision == Skip(backup.next_run_at, following, SkipReason.BILLING)
        elif has_open_run:
            assert decision == Skip(backup.next_run_at, following, SkipReason.OVERLAP)
        else:
            assert decision == ScheduleRun(backup.next_run_at, following)

    @pytest.mark.parametrize(
        "change",
        [
            {"paused": True},
            {"state": BackupState.DRAFT},
            {"schedule": None},
        ],
        ids=["paused", "draft", "unscheduled"],
    )
    def test_an_unscheduled_backup_is_never_due(self, change: dict[str, Any]) -> None:
        """Paused, draft and schedule-less backups never get a scheduled run, even with a
        stale ``next_run_at``."""
        backup = attrs.evolve(scheduled_backup(), **change)
        later = NOW + timedelta(days=3)
        assert decide_slot(backup, later, BillingState.ACTIVE, False) == NotDue()

    @given(
        slot_crons(),
        st.sampled_from(DST_TIMEZONES),
        st.integers(60, 45 * 86_400),
        st.integers(1, 600),
    )
    def test_catch_up_after_downtime_is_one_run(
        self, cron: str, timezone: str, downtime: int, tick: int
    ) -> None:
        """A scheduler back after ``downtime`` seconds, ticking every ``tick`` seconds,
        gives one run for all the slots it missed, and then none until the next slot."""
        backup = scheduled_backup(cron, timezone)
        assert backup.next_run_at is not None
        back = backup.next_run_at + timedelta(seconds=downtime)
        runs = 0
        moment = back
        next_run_at = backup.next_run_at
        first_after = next_slot(cron, timezone, back)
        while moment < min(first_after, back + 200 * timedelta(seconds=tick)):
            decision = decide_slot(
                attrs.evolve(backup, next_run_at=next_run_at), moment, BillingState.ACTIVE, False
            )
            if isinstance(decision, ScheduleRun):
                runs += 1
                assert decision.slot <= moment < decision.next_run_at
                next_run_at = decision.next_run_at
            moment += timedelta(seconds=tick)
        assert runs == 1
        assert next_run_at == first_after
