"""A creation's changes: ``creation(after)`` is ``diff({}, after)``, field for field and in
the same order (the audit event's JSON keeps that order)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.audit import JsonValue, creation, diff

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
VALUES: st.SearchStrategy[JsonValue] = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@given(st.dictionaries(st.text(max_size=12), VALUES, max_size=12))
def test_a_creation_is_the_diff_from_nothing(after: dict[str, JsonValue]) -> None:
    made = creation(after)
    assert made == diff({}, after)
    assert list(made) == list(diff({}, after))


def test_a_field_without_a_value_is_not_a_change() -> None:
    assert list(creation({"name": "db", "source": None, "paused": False})) == ["name", "paused"]
