"""One API call, described without I/O, and the exchange that carries it out.

``exchange`` is a generator that yields what to do (send an ``Attempt``, or ``Sleep``) and
receives what happened (a response or a transport error); it owns the retry policy, the
``Idempotency-Key`` of a creating POST (one key, reused on every retry), the request ids
and the translation of error answers. The sync and async clients only drive it, so the
behaviour is written once.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, Generic, TypeVar
from uuid import uuid4

import attrs
import httpx2

from strongroom.client.errors import ApiError, ConnectionFailedError, error_for

T = TypeVar("T")

# Statuses that say "not processed, try again later".
RETRIED_STATUSES = frozenset({429, 502, 503})
# Transport errors raised before the request could reach the server.
_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
# Methods that may be repeated whatever happened to the first attempt.
_REPEATABLE = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


@attrs.frozen
class RetryPolicy:
    """How often and how long to retry: ``attempts`` in all, exponential backoff with
    jitter from ``backoff`` seconds, no single wait longer than ``max_delay`` (a
    ``Retry-After`` asking for more is not waited for: the error is raised)."""

    attempts: int = 4
    backoff: float = 0.5
    max_delay: float = 30.0

    def backoff_delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay, self.backoff * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not a secret


NO_RETRY = RetryPolicy(attempts=1)


@attrs.frozen
class Call(Generic[T]):
    """A request to make and how to read its successful answer."""

    method: str
    url: str  # a path under the base URL, or an absolute URL (presigned storage)
    decode: Callable[[httpx2.Response], T]
    query: Mapping[str, str] = attrs.field(factory=dict)
    json: Any = None  # a JSON body, or None for no body
    form: Mapping[str, str] | None = None
    content: bytes | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    creates: bool = False  # a creating POST: it carries an Idempotency-Key
    idempotency_key: str | None = None
    auth: bool = True  # send the client's bearer token


@attrs.frozen
class Attempt:
    """One HTTP request to send."""

    method: str
    url: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    json: Any
    form: Mapping[str, str] | None
    content: bytes | None

    def arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx2.Client.request``."""
        arguments: dict[str, Any] = {"headers": dict(self.headers)}
        if self.query:  # an empty ``params`` would drop a presigned URL's own query
            arguments["params"] = dict(self.query)
        if self.json is not None:
            arguments["json"] = self.json
        elif self.form is not None:
            arguments["data"] = dict(self.form)
        elif self.content is not None:
            arguments["content"] = self.content
        return arguments


@attrs.frozen
class Sleep:
    """Wait before the next attempt."""

    seconds: float


Outcome = httpx2.Response | httpx2.TransportError | None
Exchange = Generator[Attempt | Sleep, Outcome, T]


@attrs.frozen
class Finished(Generic[T]):
    """The exchange is over: its answer."""

    value: T


def advance(steps: Exchange[T], outcome: Outcome) -> Attempt | Sleep | Finished[T]:
    """The exchange's next step after ``outcome`` (None to start, or after a sleep)."""
    try:
        return steps.send(outcome)
    except StopIteration as done:
        return Finished(done.value)


def new_request_id() -> str:
    """A request id the client sends (the server echoes it), so every error has one."""
    return f"req_{uuid4()}"


def exchange(call: Call[T], token: str | None, policy: RetryPolicy) -> Exchange[T]:
    """Carry out ``call``: yield attempts and sleeps, return the decoded answer or raise
    an ``ApiError``."""
    key = call.idempotency_key or (str(uuid4()) if call.creates else None)
    for attempt in range(1, policy.attempts + 1):
        request_id = new_request_id()
        headers = {**call.headers, "X-Request-ID": request_id}
        if key is not None:
            headers["Idempotency-Key"] = key
        if call.auth and token:
            headers["Authorization"] = f"Bearer {token}"
        outcome = yield Attempt(
            call.method, call.url, call.query, headers, call.json, call.form, call.content
        )
        more = attempt < policy.attempts
        if isinstance(outcome, httpx2.TransportError):
            if more and _may_repeat(outcome, call.method, key):
                yield Sleep(policy.backoff_delay(attempt))
                continue
            raise ConnectionFailedError(
                "connection_failed", f"could not reach the server: {outcome}", request_id, 0
            ) from outcome
        assert outcome is not None
        if outcome.status_code in RETRIED_STATUSES and more:
            wait = _wait(outcome, attempt, policy)
            if wait is not None:
                yield Sleep(wait)
                continue
        if outcome.is_success:
            return call.decode(outcome)
        raise answer_error(outcome, request_id)
    raise AssertionError("unreachable: the last attempt returns or raises")


def answer_error(response: httpx2.Response, request_id: str) -> ApiError:
    """The ``ApiError`` of an error answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_for(response.status_code, body, response.headers.get("X-Request-ID", request_id))


def _may_repeat(error: httpx2.TransportError, method: str, key: str | None) -> bool:
    return isinstance(error, _NOT_SENT) or method in _REPEATABLE or key is not None


def _wait(response: httpx2.Response, attempt: int, policy: RetryPolicy) -> float | None:
    """Seconds to wait before retrying ``response``, or None when it asks for too long."""
    asked = retry_after(response.headers.get("Retry-After"))
    if asked is None:
        return policy.backoff_delay(attempt)
    return asked if asked <= policy.max_delay else None


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds: delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
