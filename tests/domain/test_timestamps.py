"""The one parser of client timestamps: RFC 3339 with a zone, in UTC, within range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.timestamps import parse_timestamp

OFFSETS = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


class TestParseTimestamp:
    """``parse_timestamp`` gives an aware UTC instant or refuses with 400."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
            ("2026-03-01t12:00:00z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
            ("2026-03-01T14:00:00+02:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
            ("2026-03-01T12:00:00.250Z", datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)),
            ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
            ("0001-01-01T00:00:00-14:00", datetime(1, 1, 1, 14, tzinfo=UTC)),
            ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
            ("9999-12-31T23:59:59+01:00", datetime(9999, 12, 31, 22, 59, 59, tzinfo=UTC)),
        ],
    )
    def test_timestamps_with_a_zone_come_back_in_utc(self, text: str, expected: datetime) -> None:
        """Any offset is accepted and converted; the result's zone is UTC."""
        parsed = parse_timestamp(text, "since")
        assert parsed == expected
        assert parsed.tzinfo is UTC

    @pytest.mark.parametrize(
        "text",
        [
            "0001-01-01T00:00:00+14:00",
            "0001-01-01T00:00:00+00:01",
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T23:59:59.999999-00:01",
        ],
    )
    def test_an_instant_outside_the_years_1_to_9999_in_utc_is_refused(self, text: str) -> None:
        """A local time whose UTC form leaves the range a datetime can hold is 400 naming
        the field, never an ``OverflowError``."""
        with pytest.raises(InvalidRequestError, match="expires_at is out of range"):
            parse_timestamp(text, "expires_at")

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            ("yesterday", "RFC 3339"),
            ("2026-13-01T00:00:00Z", "RFC 3339"),
            ("", "RFC 3339"),
            ("2026-01-01T00:00:00", "time zone"),
            ("2026-01-01", "time zone"),
        ],
    )
    def test_malformed_or_naive_timestamps_are_refused(self, text: str, reason: str) -> None:
        """Text that is not a timestamp, or one without a zone, is 400 naming the field."""
        with pytest.raises(InvalidRequestError, match=f"since .*{reason}"):
            parse_timestamp(text, "since")

    @given(st.datetimes(timezones=OFFSETS))
    def test_any_aware_datetime_parses_or_is_refused_with_400(self, moment: datetime) -> None:
        """Whatever the offset, the result is the same instant in UTC, or a 400: no other
        exception escapes."""
        try:
            parsed = parse_timestamp(moment.isoformat(), "since")
        except InvalidRequestError:
            return
        assert parsed == moment
        assert parsed.tzinfo is UTC
