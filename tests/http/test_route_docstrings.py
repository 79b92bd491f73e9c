"""A route's refusals written in its docstring are read exactly, or refused at start-up."""

from __future__ import annotations

import pytest

from strongroom.adapters.webkit.declare import refusals


def test_an_errors_section_gives_each_code_its_reason() -> None:
    doc = "Read it\n\nMore prose.\n\nErrors:\n- `not_found`: no such\n  thing\n- `conflict`: busy"
    assert refusals(doc) == (
        "Read it\n\nMore prose.",
        {"not_found": "no such thing", "conflict": "busy"},
    )


def test_a_docstring_without_the_section_has_no_refusals() -> None:
    assert refusals("Read it\n\nAll of it.") == ("Read it\n\nAll of it.", {})


@pytest.mark.parametrize(
    "doc",
    [
        "Read it\nErrors:\n- `not_found`: gone",  # no blank line: would be read as prose
        "Read it\n\nErrors:\nnot_found: gone",  # not an item
        "Read it\n\nErrors:\n- not_found: gone",  # the code is not quoted
        "Read it\n\nErrors:\n- `not_found`:",  # no reason
    ],
)
def test_a_malformed_section_is_refused_rather_than_read_as_prose(doc: str) -> None:
    with pytest.raises(ValueError, match="Errors:"):
        refusals(doc)
