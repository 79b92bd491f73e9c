"""``json_response`` sends what Starlette's ``Response`` would send for the same JSON."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import Response

from strongroom.adapters.webkit.context import json_response

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(data=JSON, status=st.integers(100, 599))
def test_the_answer_is_starlettes(data: Any, status: int) -> None:
    """Same status, body and header lines, in the same order, for any status."""
    ours = json_response(data, status)
    theirs = Response(orjson.dumps(data), status_code=status, media_type="application/json")
    assert (ours.status_code, bytes(ours.body)) == (theirs.status_code, bytes(theirs.body))
    assert ours.raw_headers == theirs.raw_headers
    assert ours.background is None
