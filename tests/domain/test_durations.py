"""ISO 8601 durations in weeks, days, hours, minutes and seconds (contract sections 1, 10)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from strategies import (
    MAX_DURATION_SECONDS,
    durations,
    invalid_duration_texts,
    valid_duration_texts,
)
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError

CANONICAL = re.compile(r"P(?:[1-9]\d*D)?(?:T(?:[1-9]\d*H)?(?:[1-9]\d*M)?(?:[1-9]\d*S)?)?")


class TestParse:
    """What clients may send."""

    @given(valid_duration_texts())
    @example(("P30D", Duration(30 * 86_400)))
    @example(("P4W", Duration(28 * 86_400)))
    @example(("PT36H", Duration(36 * 3_600)))
    @example(("PT0S", Duration(0)))
    @example(("P0D", Duration(0)))
    @example(("P1W2DT3H4M5S", Duration(9 * 86_400 + 3 * 3_600 + 4 * 60 + 5)))
    def test_every_spelling_means_its_number_of_seconds(self, case: tuple[str, Duration]) -> None:
        """Any mix of weeks, days, hours, minutes and seconds parses to the seconds it names
        (a week is 604 800 s, a day 86 400 s)."""
        text, meaning = case
        assert Duration.parse(text) == meaning

    @given(invalid_duration_texts())
    @example("P1M")
    @example("P1Y")
    @example("PT1.5H")
    @example("")
    @example("P" + "9" * 5000 + "D")
    def test_months_years_fractions_and_garbage_are_invalid_requests(self, text: str) -> None:
        """Months and years (ambiguous), fractions, signs, empty or over-long texts are
        refused with ``invalid_request`` (400), never another error."""
        with pytest.raises(InvalidRequestError):
            Duration.parse(text)

    @given(st.text(max_size=30))
    @example("P\U0001d7d9D")  # MATHEMATICAL DOUBLE-STRUCK DIGIT ONE
    def test_arbitrary_text_either_parses_or_is_an_invalid_request(self, text: str) -> None:
        """No text makes the parser fail with anything but ``invalid_request``; what it does
        accept is spelled only with ``P``, ASCII digits and unit letters."""
        try:
            parsed = Duration.parse(text)
        except InvalidRequestError:
            return
        assert re.fullmatch(r"P[0-9WDTHMS]+", text)
        assert 0 <= parsed.seconds <= MAX_DURATION_SECONDS

    def test_the_message_names_the_field(self) -> None:
        """A refusal says which field was wrong and what a duration looks like."""
        with pytest.raises(InvalidRequestError, match=r"retention\.lock_for .*P30D"):
            Duration.parse("P1M", "retention.lock_for")

    def test_a_hundred_years_is_the_longest_duration(self) -> None:
        """36 500 days are accepted; one second more is refused."""
        assert Duration.parse("P36500D").seconds == MAX_DURATION_SECONDS
        with pytest.raises(InvalidRequestError, match="36500 days"):
            Duration.parse("P36500DT1S")


class TestCanonicalForm:
    """What the service returns."""

    @given(durations())
    def test_the_canonical_form_parses_back_to_the_same_duration(self, duration: Duration) -> None:
        """``parse(d.isoformat()) == d`` for every duration the service can hold."""
        assert Duration.parse(duration.isoformat()) == duration

    @given(durations())
    def test_canonical_form_has_days_and_no_zero_parts(self, duration: Duration) -> None:
        """Weeks become days, zero parts are omitted, hours < 24, minutes and seconds < 60,
        and zero is ``PT0S``."""
        text = duration.isoformat()
        if duration.seconds == 0:
            assert text == "PT0S"
            return
        assert CANONICAL.fullmatch(text), text
        assert text not in ("P", "PT")
        assert not text.endswith("T")
        parts = {unit: int(n) for n, unit in re.findall(r"(\d+)([DHMS])", text)}
        assert parts.get("H", 0) < 24
        assert parts.get("M", 0) < 60
        assert parts.get("S", 0) < 60
        assert str(duration) == text

    @pytest.mark.parametrize(
        ("text", "canonical"),
        [
            ("P1W", "P7D"),
            ("P4W", "P28D"),
            ("PT36H", "P1DT12H"),
            ("PT0S", "PT0S"),
            ("P0W", "PT0S"),
            ("PT90M", "PT1H30M"),
            ("PT86400S", "P1D"),
            ("P1DT0H0M1S", "P1DT1S"),
        ],
    )
    def test_contract_examples(self, text: str, canonical: str) -> None:
        """The contract's examples of canonical forms (``P7D``, ``P1DT12H``, ``PT0S``)."""
        assert Duration.parse(text).isoformat() == canonical


class TestComparison:
    """Durations compare as seconds."""

    @given(st.integers(0, 5214))
    def test_weeks_equal_seven_days(self, weeks: int) -> None:
        """``PnW`` equals ``P(7n)D``, and both render as days."""
        in_weeks = Duration.parse(f"P{weeks}W")
        in_days = Duration.parse(f"P{7 * weeks}D")
        assert in_weeks == in_days
        assert in_weeks.isoformat() == in_days.isoformat()

    @given(valid_duration_texts(), valid_duration_texts())
    def test_order_is_the_order_of_seconds(
        self, first: tuple[str, Duration], second: tuple[str, Duration]
    ) -> None:
        """Two parsed durations compare exactly as the numbers of seconds they mean."""
        a, b = Duration.parse(first[0]), Duration.parse(second[0])
        seconds_a, seconds_b = first[1].seconds, second[1].seconds
        assert (a < b) == (seconds_a < seconds_b)
        assert (a == b) == (seconds_a == seconds_b)
        assert (a <= b) == (seconds_a <= seconds_b)

    def test_p7d_equals_p1w(self) -> None:
        """The contract's example: ``P7D`` equals ``P1W``."""
        assert Duration.parse("P7D") == Duration.parse("P1W")
        assert Duration.parse("P7D").timedelta.days == 7
