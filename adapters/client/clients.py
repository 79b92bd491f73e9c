"""``Client`` (blocking) and ``AsyncClient``: the API's operations over httpx2.

Both inherit every operation from ``Operations`` and drive the same ``exchange`` (retries,
idempotency keys, errors); they differ only in how they send and wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any, Self, TypeVar

import attrs
import httpx2

from strongroom.client.calls import (
    Attempt,
    Call,
    Finished,
    Outcome,
    RetryPolicy,
    advance,
    answer_error,
    exchange,
    new_request_id,
)
from strongroom.client.endpoints import (
    AsyncMethod,
    AsyncPagedMethod,
    AsyncPerformer,
    Endpoint,
    PagedEndpoint,
    SyncMethod,
    SyncPagedMethod,
    SyncPerformer,
)
from strongroom.client.errors import ConnectionFailedError
from strongroom.client.operations import Operations

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741
P = Any

DEFAULT_TIMEOUT = 60.0  # above the longest long poll (claims wait up to 30 s)
CHUNK = 1024 * 1024
USER_AGENT = "strongroom-client"


@attrs.frozen
class Stored:
    """What storage answered to an upload (``etag`` identifies a stored part)."""

    status: int
    etag: str | None


def _stored(response: httpx2.Response) -> Stored:
    return Stored(response.status_code, response.headers.get("ETag"))


def _upload(url: str, content: bytes, headers: dict[str, str] | None) -> Call[Stored]:
    return Call("PUT", url, _stored, content=content, headers=headers or {}, auth=False)


class _Base(Operations):
    def __init__(
        self, base_url: str, token: str | None, retry: RetryPolicy | None, owned: bool
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry or RetryPolicy()
        self._owned = owned
        self._options: dict[str, Any] = {"headers": {"User-Agent": USER_AGENT}}

    def url(self, path: str) -> str:
        """An absolute URL: ``path`` under the base URL, or ``path`` itself if absolute."""
        return path if "://" in path else f"{self.base_url}{path}"


class Client(_Base, SyncPerformer):
    """The Strongroom API, blocking. ``Client(base_url, token)``; every operation is a
    method (``client.get_backup(backup_id)``), list operations also ``.iterate(...)``.

    Pass ``http`` to use an ``httpx2.Client`` of your own (it is not closed here), or
    ``transport`` for a transport of your own. Use as a context manager or call ``close``.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx2.Client | None = None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, retry, owned=http is None)
        self.http = http or httpx2.Client(timeout=timeout, transport=transport, **self._options)

    def bind(self, endpoint: Endpoint[Any, Any]) -> SyncMethod[Any, Any]:
        """``endpoint`` as a method of this client."""
        if isinstance(endpoint, PagedEndpoint):
            return SyncPagedMethod(self, endpoint)
        return SyncMethod(self, endpoint)

    def perform(self, call: Call[T]) -> T:
        """Carry out one call, with retries."""
        steps = exchange(call, self.token, self.retry)
        step = advance(steps, None)
        while not isinstance(step, Finished):
            if isinstance(step, Attempt):
                step = advance(steps, self._send(step))
            else:
                time.sleep(step.seconds)
                step = advance(steps, None)
        return step.value

    def _send(self, attempt: Attempt) -> Outcome:
        try:
            return self.http.request(attempt.method, self.url(attempt.url), **attempt.arguments())
        except httpx2.TransportError as error:
            return error

    def upload(self, url: str, content: bytes, headers: dict[str, str] | None = None) -> Stored:
        """``PUT`` ``content`` to a presigned upload URL (with the plan's ``headers``)."""
        return self.perform(_upload(url, content, headers))

    def download(self, url: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        """The bytes behind a presigned download URL, as they arrive."""
        request_id = new_request_id()
        try:
            with self.http.stream("GET", url, headers={"X-Request-ID": request_id}) as response:
                if not response.is_success:
                    response.read()
                    raise answer_error(response, request_id)
                yield from response.iter_bytes(chunk_size)
        except httpx2.TransportError as error:
            raise ConnectionFailedError(
                "connection_failed", f"download interrupted: {error}", request_id, 0
            ) from error

    def close(self) -> None:
        """Close the connections (unless the ``httpx2.Client`` was passed in)."""
        if self._owned:
            self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(_Base, AsyncPerformer):
    """The Strongroom API, for asyncio: as ``Client``, every method a coroutine, list
    operations also ``.iterate(...)`` (an async iterator).

    ``transport=httpx2.ASGITransport(app)`` runs against an ASGI app in-process.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx2.AsyncClient | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, retry, owned=http is None)
        self.http = http or httpx2.AsyncClient(
            timeout=timeout, transport=transport, **self._options
        )

    def bind(self, endpoint: Endpoint[Any, Any]) -> AsyncMethod[Any, Any]:
        """``endpoint`` as a coroutine method of this client."""
        if isinstance(endpoint, PagedEndpoint):
            return AsyncPagedMethod(self, endpoint)
        return AsyncMethod(self, endpoint)

    async def perform(self, call: Call[T]) -> T:
        """Carry out one call, with retries."""
        steps = exchange(call, self.token, self.retry)
        step = advance(steps, None)
        while not isinstance(step, Finished):
            if isinstance(step, Attempt):
                step = advance(steps, await self._send(step))
            else:
                await asyncio.sleep(step.seconds)
                step = advance(steps, None)
        return step.value

    async def _send(self, attempt: Attempt) -> Outcome:
        try:
            return await self.http.request(
                attempt.method, self.url(attempt.url), **attempt.arguments()
            )
        except httpx2.TransportError as error:
            return error

    async def upload(
        self, url: str, content: bytes, headers: dict[str, str] | None = None
    ) -> Stored:
        """``PUT`` ``content`` to a presigned upload URL (with the plan's ``headers``)."""
        return await self.perform(_upload(url, content, headers))

    async def download(self, url: str, chunk_size: int = CHUNK) -> AsyncIterator[bytes]:
        """The bytes behind a presigned download URL, as they arrive."""
        request_id = new_request_id()
        try:
            async with self.http.stream(
                "GET", url, headers={"X-Request-ID": request_id}
            ) as response:
                if not response.is_success:
                    await response.aread()
                    raise answer_error(response, request_id)
                async for chunk in response.aiter_bytes(chunk_size):
                    yield chunk
        except httpx2.TransportError as error:
            raise ConnectionFailedError(
                "connection_failed", f"download interrupted: {error}", request_id, 0
            ) from error

    async def aclose(self) -> None:
        """Close the connections (unless the ``httpx2.AsyncClient`` was passed in)."""
        if self._owned:
            await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
