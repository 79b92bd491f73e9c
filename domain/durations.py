"""ISO 8601 durations restricted to weeks, days, hours, minutes and seconds.

Months and years are refused because their length is ambiguous. Durations compare as
seconds (a day is 86 400 s) and are rendered canonically: weeks become days and zero
parts are omitted (``P7D``, ``P1DT12H``, ``PT0S``).
"""

from __future__ import annotations

import re
from datetime import timedelta

import attrs

from strongroom.domain.errors import InvalidRequestError

_PATTERN = re.compile(
    r"P(?:(?P<weeks>\d{1,12})W)?(?:(?P<days>\d{1,12})D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d{1,12})H)?(?:(?P<minutes>\d{1,12})M)?(?:(?P<seconds>\d{1,12})S)?)?",
    re.ASCII,
)
_UNIT_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# A hundred years: longer retention is almost certainly a typo and would overflow dates.
MAX_SECONDS = 36_500 * 86_400


@attrs.frozen(order=True)
class Duration:
    """A whole number of seconds, parsed from and rendered as an ISO 8601 duration."""

    seconds: int

    @classmethod
    def parse(cls, text: str, field: str = "duration") -> Duration:
        """Parse ``P30D``, ``P4W``, ``PT36H``...; refuse months, years, fractions and junk."""
        match = _PATTERN.fullmatch(text)
        if match is None or text in ("P", "PT") or text.endswith("T"):
            raise InvalidRequestError(
                f"{field} must be an ISO 8601 duration in weeks, days, hours, minutes and "
                "seconds, such as P30D or PT36H (months and years are refused)"
            )
        total = sum(
            int(value) * _UNIT_SECONDS[unit]
            for unit, value in match.groupdict().items()
            if value is not None
        )
        if total > MAX_SECONDS:
            raise InvalidRequestError(f"{field} must not be longer than 36500 days")
        return cls(total)

    @property
    def timedelta(self) -> timedelta:
        """The duration as a ``datetime.timedelta``."""
        return timedelta(seconds=self.seconds)

    def isoformat(self) -> str:
        """The canonical ISO 8601 form."""
        if self.seconds == 0:
            return "PT0S"
        days, rest = divmod(self.seconds, 86_400)
        hours, rest = divmod(rest, 3_600)
        minutes, seconds = divmod(rest, 60)
        date_part = f"{days}D" if days else ""
        time_part = "".join(
            f"{value}{unit}"
            for value, unit in ((hours, "H"), (minutes, "M"), (seconds, "S"))
            if value
        )
        return "P" + date_part + ("T" + time_part if time_part else "")

    def __str__(self) -> str:
        return self.isoformat()
