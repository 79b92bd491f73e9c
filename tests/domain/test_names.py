"""Names of workspaces, backups, workers, API keys and roles (contract sections 1, 10)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from strategies import invalid_names, names_with_cleaned
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.names import clean_name, name_key


class TestCleanName:
    """``clean_name`` trims, then accepts 1..100 characters without control characters."""

    @given(names_with_cleaned())
    @example(("  Nightly  ", "Nightly"))
    @example(("\tx" + "y" * 99 + "\n", "x" + "y" * 99))
    @example(("a b", "a b"))
    def test_valid_names_are_stored_trimmed(self, case: tuple[str, str]) -> None:
        """Whitespace around a name is removed and the rest is kept exactly."""
        raw, stored = case
        assert clean_name(raw) == stored

    @given(invalid_names())
    @example("")
    @example("   ")
    @example("x" * 101)
    @example("bad\x00name")
    @example("bad\x7fname")
    @example("line\nbreak")
    @example("lone\ud800surrogate")
    def test_bad_names_are_invalid_requests(self, raw: str) -> None:
        """Blank, over 100 characters after trimming, a control character inside, or not
        text at all: ``invalid_request`` (400)."""
        with pytest.raises(InvalidRequestError):
            clean_name(raw)

    @given(st.text(max_size=120))
    def test_any_text_is_either_a_clean_name_or_an_invalid_request(self, raw: str) -> None:
        """No input fails with another error; an accepted name is trimmed, 1..100
        characters, free of control characters, and cleaning it again changes nothing."""
        try:
            name = clean_name(raw)
        except InvalidRequestError:
            return
        assert name == raw.strip()
        assert 1 <= len(name) <= 100
        assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in name)
        assert clean_name(name) == name

    @given(st.text(max_size=120))
    @example("tab\there")
    @example("zero\u200bwidth")
    @example("line\u2028separator")
    @example("private\ue000use")
    def test_accepts_exactly_what_the_category_rule_accepts(self, raw: str) -> None:
        """Accepted exactly when, trimmed, it has 1 to 100 characters none of which is
        of category Cc or Cs (however the check is made fast: other unprintable
        characters, such as format characters and separators, are fine)."""
        name = raw.strip()
        allowed = 1 <= len(name) <= 100 and not any(
            unicodedata.category(c) in ("Cc", "Cs") for c in name
        )
        try:
            assert clean_name(raw) == name
        except InvalidRequestError:
            assert not allowed
        else:
            assert allowed

    @pytest.mark.parametrize("length", [1, 99, 100])
    def test_lengths_up_to_a_hundred_are_accepted(self, length: int) -> None:
        """The limits are inclusive: 1 and 100 characters are fine."""
        assert clean_name("n" * length) == "n" * length

    def test_the_message_names_the_field(self) -> None:
        """A refusal tells the client which field is wrong."""
        with pytest.raises(InvalidRequestError, match="workspace name must be 1 to 100"):
            clean_name(" ", "workspace name")


class TestNameKey:
    """Backup names and role slugs are unique case-insensitively."""

    @given(st.text(st.characters(codec="ascii"), max_size=30))
    def test_case_variants_share_a_key(self, name: str) -> None:
        """Upper, lower and swapped case of a name collide."""
        assert name_key(name) == name_key(name.upper()) == name_key(name.swapcase())

    @pytest.mark.parametrize(("a", "b"), [("Straße", "STRASSE"), ("Ωmega", "ωMEGA")])
    def test_unicode_case_folding(self, a: str, b: str) -> None:
        """Case-insensitivity follows Unicode case folding, not just ASCII."""
        assert name_key(a) == name_key(b)

    def test_different_names_do_not_collide(self) -> None:
        """Names that differ in more than case keep distinct keys."""
        assert name_key("nightly") != name_key("nightly-2")
