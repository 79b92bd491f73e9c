"""The SDK's exchange (retries, idempotency keys, request ids, errors) driven without I/O:
whatever the server answers, the rules hold."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.client import ApiError, ConnectionFailedError, RetryPolicy
from strongroom.client.calls import Attempt, Call, Finished, Sleep, advance, exchange, retry_after

POLICY = RetryPolicy(attempts=4, backoff=0.5, max_delay=30.0)
RETRIED = (429, 502, 503)

# What one attempt can meet: an answer with a status (and maybe a Retry-After), or a
# transport failure before or after the request left.
outcomes = st.one_of(
    st.tuples(st.sampled_from([200, 201, 400, 404, 409, 500, *RETRIED]), st.none()),
    st.tuples(st.sampled_from(RETRIED), st.integers(0, 60).map(str)),
    st.tuples(st.just("connect"), st.none()),
    st.tuples(st.just("read"), st.none()),
)


def ok(response: httpx2.Response) -> int:
    """The decoded answer: its status."""
    return response.status_code


def drive(call: Call[int], script: list[tuple[Any, str | None]]) -> tuple[list[Attempt], Any]:
    """Run the exchange over ``script``'s outcomes; the attempts and the result or error."""
    steps = exchange(call, "bks_token", POLICY)
    attempts: list[Attempt] = []
    step = advance(steps, None)
    script = list(script)
    while not isinstance(step, Finished):
        if isinstance(step, Sleep):
            assert 0 <= step.seconds <= POLICY.max_delay
            step = advance(steps, None)
            continue
        attempts.append(step)
        kind, header = script.pop(0) if script else (200, None)
        request = httpx2.Request(step.method, "http://x" + step.url)
        if kind == "connect":
            outcome: Any = httpx2.ConnectError("refused", request=request)
        elif kind == "read":
            outcome = httpx2.ReadError("reset", request=request)
        else:
            headers = {"Retry-After": header} if header else {}
            outcome = httpx2.Response(kind, headers=headers, request=request)
        try:
            step = advance(steps, outcome)
        except ApiError as error:
            return attempts, error
    return attempts, step.value


@given(script=st.lists(outcomes, max_size=6), creates=st.booleans())
def test_attempts_are_bounded_and_keep_one_key(
    script: list[tuple[Any, str | None]], creates: bool
) -> None:
    """At most ``attempts`` attempts; a creating call sends one Idempotency-Key on every
    attempt, another call none; every attempt has its own request id and the token."""
    call = Call("POST", "/v1/workspaces", ok, json={"name": "A"}, creates=creates)
    attempts, _ = drive(call, script)
    assert 1 <= len(attempts) <= POLICY.attempts
    keys = {a.headers.get("Idempotency-Key") for a in attempts}
    assert len(keys) == 1
    assert (None not in keys) == creates
    assert len({a.headers["X-Request-ID"] for a in attempts}) == len(attempts)
    assert all(a.headers["Authorization"] == "Bearer bks_token" for a in attempts)


@given(script=st.lists(outcomes, max_size=6))
def test_the_result_is_the_first_success_or_the_error_that_stopped(
    script: list[tuple[Any, str | None]],
) -> None:
    """A success ends the exchange with its answer; otherwise the raised error is the one
    of the last attempt (a refusal is never retried, a keyless POST not after a read
    failure)."""
    call = Call("POST", "/v1/runs/x/confirm", ok)
    attempts, result = drive(call, script)
    kind, _ = (script + [(200, None)] * 6)[len(attempts) - 1]
    if isinstance(result, int):
        assert result == kind
        assert 200 <= result < 300
    elif isinstance(result, ConnectionFailedError):
        assert kind in {"connect", "read"}
        assert result.status == 0
        assert result.request_id == attempts[-1].headers["X-Request-ID"]
    else:
        assert isinstance(result, ApiError)
        assert result.status == kind
    for earlier, _ in script[: len(attempts) - 1]:
        assert earlier in {"connect", *RETRIED}


@given(seconds=st.integers(0, 10_000))
def test_retry_after_reads_seconds_and_dates(seconds: int) -> None:
    """Delta-seconds are read as they are; an HTTP date as the time until then."""
    assert retry_after(str(seconds)) == seconds
    date = email.utils.formatdate(time.time() + seconds, usegmt=True)
    parsed = retry_after(date)
    assert parsed is not None
    assert seconds - 2 <= parsed <= seconds + 1


@pytest.mark.parametrize("value", [None, "", "soon", "-3"])
def test_retry_after_ignores_what_it_cannot_read(value: str | None) -> None:
    """Nothing readable: no wait imposed by the server (the backoff applies)."""
    assert retry_after(value) is None


@given(attempt=st.integers(1, 50))
def test_backoff_grows_and_is_capped(attempt: int) -> None:
    """Each wait is within half to all of min(max_delay, backoff * 2^(n-1))."""
    ceiling = min(POLICY.max_delay, POLICY.backoff * 2 ** (attempt - 1))
    assert ceiling / 2 <= POLICY.backoff_delay(attempt) <= ceiling
