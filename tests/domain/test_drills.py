"""Restore drills (contract 16): a drill passes only when what was restored matches what
was recorded, and a failed one names what differs."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.drills import (
    Drill,
    DrillState,
    TableFacts,
    object_problems,
    summary,
    table_problems,
)
from strongroom.domain.errors import InvalidStateError

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
digests = st.dictionaries(st.text("abc/", min_size=1, max_size=6), st.sampled_from(["0", "1"]))


def queued() -> Drill:
    return Drill(uuid4(), uuid4(), uuid4(), None, DrillState.QUEUED, NOW)


class TestChecks:
    def test_tables_name_each_difference(self) -> None:
        expected = {
            "users": TableFacts(10, "a"),
            "orders": TableFacts(5, "b"),
            "gone": TableFacts(1, "c"),
        }
        found = {
            "users": TableFacts(9, "a"),
            "orders": TableFacts(5, "x"),
            "extra": TableFacts(0, "d"),
        }
        assert table_problems(expected, found) == [
            "table extra was not in the backup",
            "table gone is missing",
            "table orders differs from the backup (checksum)",
            "table users has 9 rows, 10 were backed up",
        ]

    @given(digests, digests)
    def test_objects_differ_exactly_where_their_digests_do(
        self, expected: dict[str, str], found: dict[str, str]
    ) -> None:
        problems = object_problems(expected, found)
        assert (problems == []) == (expected == found)
        assert len(problems) == len(
            {k for k in expected.keys() | found.keys() if expected.get(k) != found.get(k)}
        )

    def test_a_long_list_is_summarised(self) -> None:
        problems = [f"object {n} is missing" for n in range(8)]
        text = summary(problems)
        assert text is not None
        assert text.endswith("object 4 is missing; and 3 more")
        assert summary([]) is None


class TestLifecycle:
    def test_a_clean_restore_succeeds_with_its_figures(self) -> None:
        run = uuid4()
        drill = queued().started(run, NOW).finished([], {"tables": 3}, 1024, 1.23456, NOW)
        assert drill.state is DrillState.SUCCEEDED
        assert (drill.run_id, drill.bytes, drill.restore_seconds, drill.error) == (
            run,
            1024,
            1.235,
            None,
        )

    def test_a_difference_fails_the_drill_naming_it(self) -> None:
        drill = queued().started(uuid4(), NOW)
        failed = drill.finished(["table users is missing"], {}, 0, 0.5, NOW)
        assert failed.state is DrillState.FAILED
        assert failed.error == "table users is missing"

    def test_a_finished_drill_cannot_finish_again(self) -> None:
        done = queued().broke("no successful run to restore", NOW)
        with pytest.raises(InvalidStateError):
            done.started(uuid4(), NOW)
        with pytest.raises(InvalidStateError):
            done.broke("again", NOW)
