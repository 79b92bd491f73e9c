"""Retention's verdicts (contract 15): which runs are kept, with which reasons, in the
backup's time zone, across DST changes."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta, tzinfo
from uuid import UUID

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies import DST_CHANGES
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.keep_rules import BUCKETS, KeepRules, RunFacts, Verdict, explain

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
DAY = Duration(86_400)
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def run(number: int, finished_at: datetime, **facts: object) -> RunFacts:
    return RunFacts(run_id=UUID(int=number), finished_at=finished_at, **facts)  # type: ignore[arg-type]


def kept(verdicts: list[Verdict]) -> set[UUID]:
    return {verdict.run_id for verdict in verdicts if verdict.keep}


rule_counts = st.integers(0, 6)
keep_rules = st.builds(
    KeepRules,
    last=rule_counts,
    hourly=rule_counts,
    daily=rule_counts,
    weekly=rule_counts,
    monthly=rule_counts,
    yearly=rule_counts,
)
durations = st.integers(1, 400 * 86_400).map(Duration)
# Any zone the machine knows; DST changes come from anchoring histories at real ones.
zones = st.one_of(
    st.sampled_from(sorted(DST_CHANGES)).map(zoneinfo.ZoneInfo),
    st.timezones(),
)


@st.composite
def histories(draw: st.DrawFn) -> list[RunFacts]:
    """Up to 40 runs spread over hours, days, months or years, often around a DST change."""
    anchor = draw(
        st.one_of(
            st.sampled_from([moment for pair in DST_CHANGES.values() for moment in pair]),
            st.datetimes(datetime(2018, 1, 1), datetime(2030, 1, 1)).map(
                lambda moment: moment.replace(tzinfo=UTC)
            ),
        )
    )
    spread = draw(st.sampled_from([3 * 3600, 3 * 86_400, 90 * 86_400, 3 * 365 * 86_400]))
    offsets = draw(st.lists(st.integers(-spread, spread), max_size=40))
    return [
        run(
            number,
            anchor + timedelta(seconds=offset),
            held=draw(st.booleans()) and draw(st.booleans()),
        )
        for number, offset in enumerate(offsets, start=1)
    ]


def reference_bucket_keeps(runs: list[RunFacts], rule: str, count: int, zone: tzinfo) -> set[UUID]:
    """The rule read literally, by brute force: a run is kept by ``rule`` when no run of its
    bucket is newer and fewer than ``count`` buckets holding a run have a later label."""
    label_of = BUCKETS[rule]

    def label(r: RunFacts) -> str:
        return label_of(r.finished_at.astimezone(zone))

    def newer(a: RunFacts, b: RunFacts) -> bool:
        return (a.finished_at, a.run_id.int) > (b.finished_at, b.run_id.int)

    chosen = set()
    for candidate in runs:
        if any(label(o) == label(candidate) and newer(o, candidate) for o in runs):
            continue
        later = {label(o) for o in runs if label(o) > label(candidate)}
        if len(later) < count:
            chosen.add(candidate.run_id)
    return chosen


class TestReasons:
    """The reason strings are exactly the contract's forms."""

    def test_each_rule_names_its_bucket_in_the_backups_zone(self) -> None:
        """22:30 UTC on 26 November is 23:30 in Berlin: the buckets are Berlin's."""
        runs = [run(1, datetime(2026, 11, 26, 22, 30, tzinfo=UTC))]
        rules = KeepRules(last=3, hourly=1, daily=1, weekly=1, monthly=1, yearly=1)
        (verdict,) = explain(runs, Duration(3600), rules, BERLIN, NOW)
        assert verdict.reasons == (
            "newest",
            "last 3",
            "hourly 2026-11-26T23",
            "daily 2026-11-26",
            "weekly 2026-W48",
            "monthly 2026-11",
            "yearly 2026",
        )
        assert verdict.keep
        assert verdict.expires_at is None

    def test_within_locked_and_held_reasons(self) -> None:
        """A recent, locked and held run says so; expires_at is when ``within`` ends."""
        finished = NOW - timedelta(hours=1)
        lock = NOW + timedelta(days=2)
        runs = [
            run(1, NOW - timedelta(minutes=1)),
            run(2, finished, locked_until=lock, held=True),
        ]
        verdicts = explain(runs, Duration(30 * 86_400), None, UTC, NOW)
        assert verdicts[1].reasons == (
            "within P30D",
            "locked until 2026-11-29T12:00:00.000Z",
            "held",
        )
        assert verdicts[1].expires_at == finished + timedelta(days=30)

    def test_an_old_run_without_a_reason_expires(self) -> None:
        """Past its expire_after and selected by no rule, a run expires, with no reasons."""
        runs = [run(1, NOW - timedelta(days=1)), run(2, NOW - timedelta(days=40))]
        verdicts = explain(runs, Duration(30 * 86_400), KeepRules(last=1), UTC, NOW)
        assert [(v.keep, v.reasons) for v in verdicts] == [
            (True, ("newest", "within P30D", "last 1")),
            (False, ()),
        ]

    def test_a_run_that_a_kept_run_references_is_kept(self) -> None:
        """Its packs hold a live snapshot's chunks: ``referenced`` keeps it."""
        old = run(1, NOW - timedelta(days=90))
        older = run(2, NOW - timedelta(days=91))
        newest = run(3, NOW - timedelta(days=1), references=frozenset({old.run_id}))
        verdicts = explain([old, older, newest], DAY, None, UTC, NOW)
        assert [(v.run_id.int, v.reasons) for v in verdicts] == [
            (3, ("newest",)),
            (1, ("referenced",)),
            (2, ()),
        ]

    def test_counts_are_refused_outside_their_range(self) -> None:
        """Negative counts (and booleans) are invalid requests."""
        with pytest.raises(InvalidRequestError):
            KeepRules(daily=-1)
        with pytest.raises(InvalidRequestError):
            KeepRules(daily=True)


class TestProperties:
    """What holds for every history, policy and zone."""

    @given(histories(), durations, st.none() | keep_rules, zones)
    def test_the_newest_run_is_always_kept(
        self, runs: list[RunFacts], expire_after: Duration, rules: KeepRules | None, zone: tzinfo
    ) -> None:
        verdicts = explain(runs, expire_after, rules, zone, NOW)
        assert [v.run_id for v in verdicts] == [
            r.run_id
            for r in sorted(runs, key=lambda r: (r.finished_at, r.run_id.int), reverse=True)
        ]
        if runs:
            assert verdicts[0].keep
            assert "newest" in verdicts[0].reasons

    @given(histories(), durations, st.none() | keep_rules, zones, st.data())
    def test_held_or_locked_runs_are_always_kept(
        self,
        runs: list[RunFacts],
        expire_after: Duration,
        rules: KeepRules | None,
        zone: tzinfo,
        data: st.DataObject,
    ) -> None:
        locked = [
            attrs.evolve(r, locked_until=NOW + timedelta(seconds=data.draw(st.integers(1, 10**7))))
            if data.draw(st.booleans())
            else r
            for r in runs
        ]
        for verdict, facts in zip(
            sorted(explain(locked, expire_after, rules, zone, NOW), key=lambda v: v.run_id.int),
            sorted(locked, key=lambda r: r.run_id.int),
            strict=True,
        ):
            if facts.held or facts.locked_until is not None:
                assert verdict.keep

    @given(histories(), durations, keep_rules, zones, st.data())
    def test_a_policy_keeping_at_least_as_much_keeps_a_superset(
        self,
        runs: list[RunFacts],
        expire_after: Duration,
        rules: KeepRules,
        zone: tzinfo,
        data: st.DataObject,
    ) -> None:
        more = KeepRules(
            **{
                name: getattr(rules, name) + data.draw(st.integers(0, 3), label=name)
                for name in attrs.fields_dict(KeepRules)
            }
        )
        longer = Duration(expire_after.seconds + data.draw(st.integers(0, 10**7)))
        assert more.covers(rules)
        assert kept(explain(runs, expire_after, rules, zone, NOW)) <= kept(
            explain(runs, longer, more, zone, NOW)
        )

    @given(histories(), keep_rules, zones)
    def test_bucket_counts_match_the_rule_read_literally(
        self, runs: list[RunFacts], rules: KeepRules, zone: tzinfo
    ) -> None:
        verdicts = explain(runs, DAY, rules, zone, NOW)
        for rule in BUCKETS:
            by_rule = {
                v.run_id for v in verdicts if any(r.startswith(f"{rule} ") for r in v.reasons)
            }
            assert by_rule == reference_bucket_keeps(runs, rule, getattr(rules, rule), zone)
            labels = {BUCKETS[rule](r.finished_at.astimezone(zone)) for r in runs}
            assert len(by_rule) == min(getattr(rules, rule), len(labels))
