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

from collections.abc import Callable, Iterable, Mapping
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


def _hourly(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H")


def _daily(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def _weekly(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year:04d}-W{week:02d}"


def _monthly(moment: datetime) -> str:
    return moment.strftime("%Y-%m")


def _yearly(moment: datetime) -> str:
    return f"{moment.year:04d}"


# Each calendar rule and how it labels a local time; labels of one rule sort like time.
BUCKETS: Mapping[str, Callable[[datetime], str]] = {
    "hourly": _hourly,
    "daily": _daily,
    "weekly": _weekly,
    "monthly": _monthly,
    "yearly": _yearly,
}


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


def explain(
    runs: Iterable[RunFacts],
    expire_after: Duration,
    keep: KeepRules | None,
    zone: tzinfo,
    now: datetime,
) -> list[Verdict]:
    """Every run's verdict, newest first (ties broken by run id, highest first)."""
    ordered = sorted(runs, key=lambda run: (run.finished_at, run.run_id.int), reverse=True)
    rules = keep or KeepRules()
    reasons: dict[UUID, list[str]] = {run.run_id: [] for run in ordered}
    if ordered:
        reasons[ordered[0].run_id].append("newest")
    window = timedelta(seconds=expire_after.seconds)
    for run in ordered:
        if now < run.finished_at + window:
            reasons[run.run_id].append(f"within {expire_after}")
    for run in ordered[: rules.last]:
        reasons[run.run_id].append(f"last {rules.last}")
    for rule, label_of in BUCKETS.items():
        newest_in: dict[str, RunFacts] = {}
        for run in ordered:
            newest_in.setdefault(label_of(run.finished_at.astimezone(zone)), run)
        for label in sorted(newest_in, reverse=True)[: getattr(rules, rule)]:
            reasons[newest_in[label].run_id].append(f"{rule} {label}")
    for run in ordered:
        if run.locked_until is not None and run.locked_until > now:
            reasons[run.run_id].append(f"locked until {format_timestamp(run.locked_until)}")
        if run.held:
            reasons[run.run_id].append("held")
    referenced = {earlier for run in ordered if reasons[run.run_id] for earlier in run.references}
    for run in ordered:
        if run.run_id in referenced and run.run_id in reasons:
            reasons[run.run_id].append("referenced")
    return [
        Verdict(
            run_id=run.run_id,
            finished_at=run.finished_at,
            keep=bool(reasons[run.run_id]),
            reasons=tuple(reasons[run.run_id]),
            expires_at=(run.finished_at + window if now < run.finished_at + window else None),
        )
        for run in ordered
    ]
