"""Which runs retention keeps, and why (contract section 15).

One function, :func:`explain`, decides for every successful run of a backup whether it is
kept or expires, with the reasons a person reads: the retention job, the explain endpoint,
the preview, the dashboard and the CLI all call it, so what a preview says is what the job
does.

A run is kept while any reason holds: it is the newest, its ``expire_after`` has not
passed (``within P30D``), a keep rule selects it (``last 3``, ``daily 2026-11-26``...), it
is locked (``locked until ...``) or held, or a run kept for another reason references it.
Calendar buckets are the wall-clock labels in the backup's time zone: each rule keeps the
newest run of each of its N most recent buckets that hold one (restic's ``--keep-daily``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, tzinfo
from uuid import UUID

import attrs

from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.timestamps import format_timestamp

# The largest count a keep rule takes: more would keep a run per hour for 11 years.
MAX_KEEP = 100_000


def _count(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not 0 <= value <= MAX_KEEP:
        raise InvalidRequestError(
            f"retention.keep.{attribute.name} must be an integer from 0 to {MAX_KEEP}"
        )


@attrs.frozen
class KeepRules:
    """``retention.keep``: how many of the newest runs and calendar buckets to keep."""

    last: int = attrs.field(default=0, validator=_count)
    hourly: int = attrs.field(default=0, validator=_count)
    daily: int = attrs.field(default=0, validator=_count)
    weekly: int = attrs.field(default=0, validator=_count)
    monthly: int = attrs.field(default=0, validator=_count)
    yearly: int = attrs.field(default=0, validator=_count)

    def covers(self, other: KeepRules) -> bool:
        """Whether these rules keep at least as many of every kind as ``other``."""
        return all(
            getattr(self, name) >= getattr(other, name) for name in attrs.fields_dict(KeepRules)
        )


# Each calendar rule's bucket of a local time, as numbers that sort like time, and the
# bucket's label (``daily 2026-11-26``); labels of one rule sort like time too.
_KEYS: Mapping[str, Callable[[datetime], tuple[int, ...]]] = {
    "hourly": lambda moment: (moment.year, moment.month, moment.day, moment.hour),
    "daily": lambda moment: (moment.year, moment.month, moment.day),
    "weekly": lambda moment: tuple(moment.isocalendar()[:2]),
    "monthly": lambda moment: (moment.year, moment.month),
    "yearly": lambda moment: (moment.year,),
}
_LABELS: Mapping[str, str] = {
    "hourly": "{0:04d}-{1:02d}-{2:02d}T{3:02d}",
    "daily": "{0:04d}-{1:02d}-{2:02d}",
    "weekly": "{0:04d}-W{1:02d}",
    "monthly": "{0:04d}-{1:02d}",
    "yearly": "{0:04d}",
}


def _labeller(rule: str) -> Callable[[datetime], str]:
    key_of, label = _KEYS[rule], _LABELS[rule]
    return lambda moment: label.format(*key_of(moment))


# Each calendar rule and how it labels a local time.
BUCKETS: Mapping[str, Callable[[datetime], str]] = {rule: _labeller(rule) for rule in _KEYS}


@attrs.frozen
class RunFacts:
    """What retention needs to know of one successful run."""

    run_id: UUID
    finished_at: datetime
    locked_until: datetime | None = None
    held: bool = False
    # Earlier runs whose artifacts this run's snapshot references.
    references: frozenset[UUID] = frozenset()


@attrs.frozen
class Verdict:
    """One run's fate: kept or expiring, with every reason that keeps it."""

    run_id: UUID
    finished_at: datetime
    keep: bool
    reasons: tuple[str, ...]
    # When ``within`` stops keeping the run; None once that has passed.
    expires_at: datetime | None


@attrs.frozen
class Decision:
    """Every run, newest first, and the reasons of the runs kept: a run without one
    expires. Verdicts (the reasons people read) are made only of the runs asked for."""

    ordered: Sequence[RunFacts]
    reasons: Mapping[UUID, Sequence[str]]
    window: timedelta
    now: datetime

    @property
    def kept(self) -> frozenset[UUID]:
        """The runs retention keeps."""
        return frozenset(self.reasons)

    @property
    def expiring(self) -> frozenset[UUID]:
        """The runs retention no longer keeps."""
        return frozenset(run.run_id for run in self.ordered if run.run_id not in self.reasons)

    def verdict(self, run: RunFacts) -> Verdict:
        """The verdict of one of the runs."""
        reasons = tuple(self.reasons.get(run.run_id, ()))
        until = run.finished_at + self.window
        return Verdict(
            run_id=run.run_id,
            finished_at=run.finished_at,
            keep=bool(reasons),
            reasons=reasons,
            expires_at=until if self.now < until else None,
        )

    def verdicts(self) -> list[Verdict]:
        """Every run's verdict, newest first."""
        return [self.verdict(run) for run in self.ordered]


def decide(
    runs: Iterable[RunFacts],
    expire_after: Duration,
    keep: KeepRules | None,
    zone: tzinfo,
    now: datetime,
) -> Decision:
    """Which runs are kept and why, newest first (ties broken by run id, highest first).
    A calendar rule keeps the newest run of each of its N latest buckets; only those
    buckets are labelled."""
    ordered = sorted(runs, key=lambda run: (run.finished_at, run.run_id.int), reverse=True)
    rules = keep or KeepRules()
    reasons: dict[UUID, list[str]] = {}

    def note(run_id: UUID, reason: str) -> None:
        reasons.setdefault(run_id, []).append(reason)

    if ordered:
        note(ordered[0].run_id, "newest")
    window = timedelta(seconds=expire_after.seconds)
    within = f"within {expire_after}"
    for run in ordered:  # newest first: the runs within the window come first
        if not now < run.finished_at + window:
            break
        note(run.run_id, within)
    for run in ordered[: rules.last]:
        note(run.run_id, f"last {rules.last}")
    active = [(rule, _KEYS[rule], getattr(rules, rule)) for rule in BUCKETS]
    active = [(rule, key_of, count) for rule, key_of, count in active if count > 0]
    newest_in: list[dict[tuple[int, ...], RunFacts]] = [{} for _ in active]
    hourly = rules.hourly > 0
    previous: tuple[int, ...] = ()
    for run in ordered if active else ():
        local = run.finished_at.astimezone(zone)
        # Every bucket is a function of the local date (and hour, for hourly): a run on the
        # same one as the run before it (newer) falls in the buckets that run filled.
        mark = (local.year, local.month, local.day, local.hour if hourly else 0)
        if mark == previous:
            continue
        previous = mark
        for (_, key_of, _), newest in zip(active, newest_in, strict=True):
            newest.setdefault(key_of(local), run)
    for (rule, _, count), newest in zip(active, newest_in, strict=True):
        for key in heapq.nlargest(count, newest):
            note(newest[key].run_id, f"{rule} {_LABELS[rule].format(*key)}")
    for run in ordered:
        if run.locked_until is not None and run.locked_until > now:
            note(run.run_id, f"locked until {format_timestamp(run.locked_until)}")
        if run.held:
            note(run.run_id, "held")
    referenced = {
        earlier
        for run in ordered
        if run.references and run.run_id in reasons
        for earlier in run.references
    }
    for run in ordered if referenced else ():
        if run.run_id in referenced:
            note(run.run_id, "referenced")
    return Decision(ordered, reasons, window, now)


def explain(
    runs: Iterable[RunFacts],
    expire_after: Duration,
    keep: KeepRules | None,
    zone: tzinfo,
    now: datetime,
) -> list[Verdict]:
    """Every run's verdict, newest first (ties broken by run id, highest first)."""
    return decide(runs, expire_after, keep, zone, now).verdicts()
