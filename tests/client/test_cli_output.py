"""Tables that fit: ids and numbers never cut, text cut with an ellipsis, short ids that
resolve back, sizes in binary units."""

from __future__ import annotations

from uuid import UUID, uuid4

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.entrypoints.cli.context import CommandError, pick
from strongroom.entrypoints.cli.output import human_size, table_lines


@given(st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=5), st.integers(40, 200))
def test_a_table_fits_and_keeps_whole_ids(names: list[str], width: int) -> None:
    rows = [{"id": uuid4(), "name": n, "size": 123456789} for n in names]
    lines = table_lines(rows, ["id", "name", "size"], width=width)
    assert all(len(line) <= width for line in lines)
    for row, line in zip(rows, lines[1:], strict=True):
        assert line.startswith(str(row["id"])[:8])
        assert line.endswith("117.7 MiB")


def test_long_text_ends_with_an_ellipsis_and_no_trunc_shows_all() -> None:
    row = {"id": UUID(int=1), "error": "x" * 300}
    cut = table_lines([row], ["id", "error"], width=80)
    assert cut[1].endswith("…")
    assert len(cut[1]) == 80
    whole = table_lines([row], ["id", "error"], width=80, no_trunc=True)
    assert str(UUID(int=1)) in whole[1]
    assert whole[1].endswith("x" * 300)


def test_sizes_read_in_binary_units() -> None:
    assert [human_size(n) for n in (0, 1023, 1024, 1536, 5 * 2**20)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "5.0 MiB",
    ]


def test_a_prefix_names_one_object_or_is_refused() -> None:
    first, second = (
        UUID("abcd1234-0000-4000-8000-000000000001"),
        UUID("abcd5678-0000-4000-8000-000000000002"),
    )
    known = [(first, "nightly"), (second, "weekly")]
    assert pick("backup", "NIGHTLY", known) == first
    assert pick("backup", "abcd5", known) == second
    with pytest.raises(CommandError, match="more than one") as ambiguous:
        pick("backup", "abcd", known)
    assert ambiguous.value.exit_code == 1
    with pytest.raises(CommandError, match="no backup named") as unknown:
        pick("backup", "monthly", known)
    assert unknown.value.exit_code == 1
    with pytest.raises(click.BadParameter):
        pick("run", "not-an-id", [(first, None)])
