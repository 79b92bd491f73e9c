"""A schedule: a 5-field cron expression in an IANA time zone (contracts 5, 11 and 13),
shared by a backup's runs and by its restore drills."""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Mapping
from datetime import UTC, datetime

import attrs
from croniter import CroniterBadDateError, croniter

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.slots import next_slot

# A fixed instant from which a cron expression must fire at least once (it always does
# within a few years unless it names a date that never exists, such as 30 February).
_CRON_PROBE = datetime(2000, 1, 1, tzinfo=UTC)


@attrs.frozen
class _CronField:
    """One of the five fields of a cron expression: its range and its English names."""

    label: str
    low: int
    high: int
    names: Mapping[str, int] = attrs.field(factory=dict)

    def value(self, text: str) -> int | None:
        """A number within the range, or a name (any case); ``None`` for anything else."""
        if _CRON_NUMBER.fullmatch(text):
            number = int(text)
            return number if self.low <= number <= self.high else None
        return self.names.get(text.lower())

    def accepts(self, text: str) -> bool:
        """A list of ``*``, values and ranges ``a-b`` (``a <= b``), where ``*`` and ranges
        may take a step ``/n`` of 1 up to the field's largest value."""
        for item in text.split(","):
            base, slash, step = item.partition("/")
            if slash and not (_CRON_NUMBER.fullmatch(step) and 1 <= int(step) <= self.high):
                return False
            if base == "*":
                continue
            low, dash, high = base.partition("-")
            first = self.value(low)
            if first is None:
                return False
            if not dash:
                if slash:  # a step needs a range: ``5/15`` is not standard cron
                    return False
                continue
            last = self.value(high)
            if last is None or last < first:
                return False
        return True


_CRON_NUMBER = re.compile(r"[0-9]{1,2}", re.ASCII)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_FIELDS = (
    _CronField("minute", 0, 59),
    _CronField("hour", 0, 23),
    _CronField("day-of-month", 1, 31),
    _CronField("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, 1)}),
    # 0 and 7 are both Sunday.
    _CronField("day-of-week", 0, 7, {name: number for number, name in enumerate(_WEEKDAYS)}),
)


def _check_cron_grammar(expression: str) -> None:
    """The grammar contract 13 allows, checked before croniter (which takes more: ``L``,
    ``?``, ``W``, ``#``, ``H``, seconds, any step). Messages never repeat the expression."""
    fields = re.split(r"[ \t]+", expression.strip(" \t"))
    if len(fields) != len(_CRON_FIELDS):
        raise InvalidRequestError("schedule.cron must be a 5-field cron expression")
    for text, field in zip(fields, _CRON_FIELDS, strict=True):
        if not field.accepts(text):
            raise InvalidRequestError(
                f"schedule.cron: the {field.label} field takes numbers {field.low}-{field.high}"
                f"{', names' if field.names else ''}, *, ranges, steps within the range and "
                "lists, nothing else"
            )


def _valid_cron(expression: str) -> str:
    _check_cron_grammar(expression)
    if not croniter.is_valid(expression):
        raise InvalidRequestError("schedule.cron must be a 5-field cron expression")
    try:
        croniter(expression, _CRON_PROBE).get_next(datetime)
    except CroniterBadDateError as error:
        raise InvalidRequestError("schedule.cron never fires") from error
    return expression


# Names the time zone database holds that are not zones of the world: the host's own
# zone, the database's template and placeholder, and the alternative trees.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def canonical_timezones() -> frozenset[str]:
    """The IANA names a schedule may use (contract 13)."""
    return frozenset(
        name
        for name in zoneinfo.available_timezones()
        if name not in _NOT_ZONES and not name.startswith(("posix/", "right/"))
    )


def _valid_timezone(name: str) -> str:
    if name not in canonical_timezones():
        raise InvalidRequestError("schedule.timezone must be an IANA time zone name")
    return name


@attrs.frozen
class Schedule:
    """When a local or cloud backup runs: a 5-field cron expression in an IANA time zone."""

    cron: str = attrs.field(converter=_valid_cron)
    timezone: str = attrs.field(converter=_valid_timezone)

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment``, in UTC, with the DST rules of
        contract 11 (see ``schedules``)."""
        return next_slot(self.cron, self.timezone, moment)
