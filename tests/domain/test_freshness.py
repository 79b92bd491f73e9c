"""A backup's health (contract 16): late when its newest success is older than
``freshness.max_age`` (or two schedule slots), failing when the newest finished run
failed, never before a first success; and the two moves people are told about."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.backups import Schedule
from strongroom.domain.durations import Duration
from strongroom.domain.freshness import (
    Announcement,
    Failure,
    Freshness,
    HealthStatus,
    announcement,
    evaluate,
)

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
BACKUP = UUID(int=7)
HOURLY = Schedule("0 * * * *", "UTC")


def failure(at: datetime) -> Failure:
    return Failure(uuid4(), "disk full", at)


class TestStatus:
    def test_a_success_within_max_age_is_ok(self) -> None:
        health = evaluate(
            BACKUP, Freshness(Duration(3600)), None, NOW - timedelta(minutes=59), None, NOW
        )
        assert health.status is HealthStatus.OK
        assert health.age_seconds == 59 * 60

    def test_a_success_older_than_max_age_is_late_whoever_calls(self) -> None:
        health = evaluate(
            BACKUP, Freshness(Duration(3600)), HOURLY, NOW - timedelta(minutes=61), None, NOW
        )
        assert health.status is HealthStatus.LATE

    def test_without_freshness_two_missed_slots_make_it_late(self) -> None:
        """Success at 10:00:30: the 11:00 slot may fail; once 12:00 has passed, it is late."""
        success = datetime(2026, 11, 27, 10, 0, 30, tzinfo=UTC)
        at_noon = datetime(2026, 11, 27, 12, tzinfo=UTC)
        assert evaluate(BACKUP, None, HOURLY, success, None, at_noon).status is HealthStatus.OK
        later = at_noon + timedelta(seconds=1)
        assert evaluate(BACKUP, None, HOURLY, success, None, later).status is HealthStatus.LATE

    def test_an_unscheduled_backup_without_freshness_is_never_late(self) -> None:
        long_ago = NOW - timedelta(days=4000)
        assert evaluate(BACKUP, None, None, long_ago, None, NOW).status is HealthStatus.OK

    def test_a_failure_after_the_newest_success_is_failing(self) -> None:
        success = NOW - timedelta(minutes=30)
        failed = failure(NOW - timedelta(minutes=5))
        health = evaluate(BACKUP, Freshness(Duration(3600)), None, success, failed, NOW)
        assert health.status is HealthStatus.FAILING
        assert health.last_failure == failed

    def test_a_failure_before_the_newest_success_is_history(self) -> None:
        success = NOW - timedelta(minutes=5)
        failed = failure(NOW - timedelta(minutes=30))
        health = evaluate(BACKUP, Freshness(Duration(3600)), None, success, failed, NOW)
        assert health.status is HealthStatus.OK

    def test_before_any_success(self) -> None:
        assert evaluate(BACKUP, None, HOURLY, None, None, NOW).status is HealthStatus.NEVER
        assert evaluate(BACKUP, None, HOURLY, None, failure(NOW), NOW).status is (
            HealthStatus.FAILING
        )
        assert evaluate(BACKUP, None, HOURLY, None, None, NOW).age_seconds is None

    @given(st.integers(1, 10**7), st.integers(0, 10**7), st.booleans())
    def test_late_exactly_when_the_age_exceeds_max_age(
        self, max_age: int, age: int, failed: bool
    ) -> None:
        """Late wins over failing; otherwise the status follows the newest finished run."""
        success = NOW - timedelta(seconds=age)
        last_failure = failure(success + timedelta(seconds=1)) if failed else None
        health = evaluate(BACKUP, Freshness(Duration(max_age)), None, success, last_failure, NOW)
        if age > max_age:
            assert health.status is HealthStatus.LATE
        else:
            assert health.status is (HealthStatus.FAILING if failed else HealthStatus.OK)


class TestAnnouncements:
    @given(st.lists(st.sampled_from(list(HealthStatus)), min_size=1, max_size=30))
    def test_late_and_recovered_alternate_starting_with_late(
        self, statuses: list[HealthStatus]
    ) -> None:
        """Whatever the path, a backup is announced late once per spell of lateness, and
        recovered only after being late."""
        said = [
            event
            for before, after in zip([HealthStatus.OK, *statuses], statuses, strict=False)
            if (event := announcement(before, after)) is not None
        ]
        expected = [Announcement.LATE, Announcement.RECOVERED] * len(said)
        assert said == expected[: len(said)]

    def test_urgency_puts_late_and_failing_first(self) -> None:
        ordered = sorted(HealthStatus, key=lambda status: status.urgency)
        assert ordered[:2] == [HealthStatus.LATE, HealthStatus.FAILING]
