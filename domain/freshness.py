"""A backup's health: is its newest good copy recent enough? (contract section 16)

The service evaluates this itself, from its own records and the clock, so a backup whose
agent died goes ``late`` although nothing calls the API. Health moves between four
statuses; the moves that people are told about are :func:`announcement`'s.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.backups import Freshness, Schedule

# Without ``freshness``, a scheduled backup is late once this many slots passed without
# a success (one missed slot is a blip, two are silence).
SLOTS_OF_GRACE = 2


class HealthStatus(StrEnum):
    """How a backup stands; ordered from worst to best by ``urgency``."""

    LATE = "late"
    FAILING = "failing"
    NEVER = "never"
    OK = "ok"

    @property
    def urgency(self) -> int:
        """Lower first: the dashboard and the health list show late and failing first."""
        return list(HealthStatus).index(self)


@attrs.frozen
class Failure:
    """The newest failed run."""

    run_id: UUID
    error: str | None
    at: datetime


@attrs.frozen
class Health:
    """One backup's health at an instant."""

    backup_id: UUID
    status: HealthStatus
    last_success_at: datetime | None
    last_failure: Failure | None
    age_seconds: int | None


def deadline(
    last_success_at: datetime, freshness: Freshness | None, schedule: Schedule | None
) -> datetime | None:
    """The instant after which, without a newer success, the backup is late (None: never)."""
    if freshness is not None:
        return last_success_at + timedelta(seconds=freshness.max_age.seconds)
    if schedule is None:
        return None
    moment = last_success_at
    for _ in range(SLOTS_OF_GRACE):
        moment = schedule.next_after(moment)
    return moment


def evaluate(
    backup_id: UUID,
    freshness: Freshness | None,
    schedule: Schedule | None,
    last_success_at: datetime | None,
    last_failure: Failure | None,
    now: datetime,
) -> Health:
    """The backup's health at ``now``: late beats failing, failing beats ok.

    ``failing`` means the newest finished run failed (after the newest success)."""
    age = None if last_success_at is None else max(0, int((now - last_success_at).total_seconds()))
    failed_since = last_failure is not None and (
        last_success_at is None or last_failure.at > last_success_at
    )
    if last_success_at is None:
        status = HealthStatus.FAILING if failed_since else HealthStatus.NEVER
    else:
        limit = deadline(last_success_at, freshness, schedule)
        if limit is not None and now > limit:
            status = HealthStatus.LATE
        elif failed_since:
            status = HealthStatus.FAILING
        else:
            status = HealthStatus.OK
    return Health(backup_id, status, last_success_at, last_failure, age)


class Announcement(StrEnum):
    """The health events people subscribe to."""

    LATE = "backup.late"
    RECOVERED = "backup.recovered"


def announcement(before: HealthStatus, after: HealthStatus) -> Announcement | None:
    """What a move from ``before`` to ``after`` tells people: going late, once per spell,
    and leaving it (only a newer success ends lateness, even if a failure follows it)."""
    if after is HealthStatus.LATE and before is not HealthStatus.LATE:
        return Announcement.LATE
    if before is HealthStatus.LATE and after is not HealthStatus.LATE:
        return Announcement.RECOVERED
    return None
