"""Bearer tokens: recognisable prefix, 256 random bits, checksum; stored only as a hash."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from strongroom.domain.tokens import TokenKind, format_token, hash_token, token_kind

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
RANDOM = st.binary(min_size=32, max_size=32)
KINDS = st.sampled_from(TokenKind)


def _token() -> st.SearchStrategy[str]:
    return st.builds(format_token, KINDS, RANDOM)


class TestFormat:
    """The shape of a token."""

    @given(KINDS, st.binary(min_size=32, max_size=64))
    def test_prefix_body_and_checksum(self, kind: TokenKind, random_bytes: bytes) -> None:
        """A token is its kind's prefix, 43 base-62 characters and a 6-character checksum,
        and it is recognised as that kind."""
        token = format_token(kind, random_bytes)
        assert token.startswith(kind.value)
        assert len(token) == len(kind.value) + 43 + 6
        assert set(token[len(kind.value) :]) <= set(BASE62)
        assert token_kind(token) is kind

    def test_the_contracts_prefixes(self) -> None:
        """Sessions, API keys and workers are told apart by ``bks_``, ``bkk_``, ``bkw_``."""
        assert TokenKind.SESSION.value == "bks_"
        assert TokenKind.API_KEY.value == "bkk_"
        assert TokenKind.WORKER.value == "bkw_"

    @given(KINDS, st.binary(max_size=31))
    def test_fewer_than_256_random_bits_are_refused(self, kind: TokenKind, short: bytes) -> None:
        """A token is never built from less than 32 random bytes."""
        with pytest.raises(ValueError, match="256 bits"):
            format_token(kind, short)

    @given(KINDS, RANDOM, RANDOM)
    def test_different_randomness_gives_different_tokens(
        self, kind: TokenKind, first: bytes, second: bytes
    ) -> None:
        """No two 256-bit values share a token (the body keeps every bit)."""
        assume(first != second)
        assert format_token(kind, first) != format_token(kind, second)


class TestChecksum:
    """A secret scanner can tell a real token from noise without a database."""

    @given(_token(), st.data())
    def test_any_single_character_change_is_detected(self, token: str, data: st.DataObject) -> None:
        """Replacing any one character (prefix, body or checksum) makes the token
        unrecognised."""
        position = data.draw(st.integers(0, len(token) - 1), label="position")
        replacement = data.draw(
            st.characters().filter(lambda c: c != token[position]), label="replacement"
        )
        changed = token[:position] + replacement + token[position + 1 :]
        assert token_kind(changed) is None

    @given(_token(), st.data())
    def test_adjacent_swaps_are_detected(self, token: str, data: st.DataObject) -> None:
        """Swapping two different neighbouring characters is detected too."""
        position = data.draw(st.integers(0, len(token) - 2), label="position")
        assume(token[position] != token[position + 1])
        swapped = token[:position] + token[position + 1] + token[position] + token[position + 2 :]
        assert token_kind(swapped) is None

    @given(_token(), st.text(BASE62, min_size=1, max_size=3))
    def test_truncated_or_extended_tokens_are_refused(self, token: str, extra: str) -> None:
        """A token with characters missing or appended is not recognised."""
        assert token_kind(token[: -len(extra)]) is None
        assert token_kind(token + extra) is None

    @given(st.text(max_size=80))
    def test_arbitrary_text_is_not_a_token(self, text: str) -> None:
        """Text that was not made by ``format_token`` is not recognised, and never crashes."""
        assert token_kind(text) is None


class TestHash:
    """Only the hash of a token is stored."""

    @given(_token())
    def test_the_hash_is_stable_and_hides_the_token(self, token: str) -> None:
        """Hashing twice gives the same 64 hex digits, which do not contain the token."""
        stored = hash_token(token)
        assert stored == hash_token(token)
        assert len(stored) == 64
        assert set(stored) <= set("0123456789abcdef")
        assert token not in stored

    @given(_token(), _token())
    def test_different_tokens_have_different_hashes(self, first: str, second: str) -> None:
        """Two different tokens never share a stored hash."""
        assume(first != second)
        assert hash_token(first) != hash_token(second)
