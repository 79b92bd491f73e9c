"""The one ASGI layer between the server and the router: what every request needs.

In one pass over the request's headers it finds the request id (``request_ids.py``), the
origin of a cross-origin call (``cors.py``) and whether the client accepts gzip
(``compression.py``), and wraps ``send`` only for what applies: the request id always,
CORS and compression only for a request that asks for them. Around the router it renders
the exceptions of the error families (``errors.py``), answers the last-resort 500, ends a
request whose client went away, and counts and times every request (``adapters/metrics``).

One layer, not one per concern: Starlette's own stack put two exception layers and a
per-route exception wrapper around ours, and our concerns were a layer each; every layer
wraps ``send`` in a closure and the exception layers build a ``Request`` each, which was
most of what ``GET /healthz`` cost.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strongroom.adapters.metrics.http import HttpMetrics, record
from strongroom.adapters.webkit.compression import accepts_gzip, compressing
from strongroom.adapters.webkit.cors import allowed_origins, answer_preflight, readable
from strongroom.adapters.webkit.errors import client_disconnected, internal_error
from strongroom.adapters.webkit.request_ids import choose_request_id

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]
_REQUEST_ID = b"x-request-id"


def _with_id(
    headers: Iterable[tuple[bytes, bytes]] | None, header: tuple[bytes, bytes]
) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``header`` as their one request id (an error envelope names the
    id already; the server's answer names it once)."""
    if not headers:
        return [header]
    for name, _ in headers:
        if name == _REQUEST_ID:
            return [*(h for h in headers if h[0] != _REQUEST_ID), header]
    return [*headers, header]


def handler_for(
    handlers: Mapping[type[Exception], ErrorHandler], failure: Exception
) -> ErrorHandler | None:
    """The handler of ``failure``'s family: the nearest class of its hierarchy that has one."""
    for cls in type(failure).__mro__:
        handler = handlers.get(cls)
        if handler is not None:
            return handler
    return None


class ErrorRendering:
    """The error families' answers rendered inside the middleware an embedder adds (as
    Starlette's ``ExceptionMiddleware`` would), so that it sees them as answers; the
    application installs it only when some middleware was added."""

    def __init__(self, app: ASGIApp, handlers: Mapping[type[Exception], ErrorHandler]) -> None:
        self.app = app
        self.handlers = dict(handlers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sender(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sender)
        except Exception as failure:
            handler = handler_for(self.handlers, failure)
            if handler is None or started:
                raise
            response = await handler(Request(scope, receive), failure)
            await response(scope, receive, sender)
            failure.__traceback__ = None


def _read_headers(
    headers: Iterable[tuple[bytes, bytes]],
) -> tuple[str | None, bytes | None, bytes | None, bool]:
    """What the layer needs of the request's headers, in one pass: the client's request id
    (the first), ``Accept-Encoding`` (the first), ``Origin`` (the last), and whether an
    ``Access-Control-Request-Method`` says this is a preflight."""
    sent_id: str | None = None
    accept_encoding: bytes | None = None
    origin: bytes | None = None
    preflight = False
    for name, value in headers:
        if name == _REQUEST_ID:
            if sent_id is None:
                sent_id = value.decode("latin-1")
        elif name == b"accept-encoding":
            if accept_encoding is None:
                accept_encoding = value
        elif name == b"origin":
            origin = value
        elif name == b"access-control-request-method":
            preflight = True
    return sent_id, accept_encoding, origin, preflight


class HttpLayer:
    """Request id, CORS, gzip, error rendering and metrics for every HTTP request.

    ``handlers`` render the exceptions of each family (looked up along the exception's
    class hierarchy, as Starlette does); their answers pass through CORS and compression
    like any other. Anything else is the logged 500 ``internal`` with the request id, sent
    with the request id alone; a client that went away ends quietly. A failure after the
    answer has started goes up to the server, which must close the connection.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: HttpMetrics,
        handlers: Mapping[type[Exception], ErrorHandler],
        access_log: bool = False,
        cors_origins: Iterable[str] = (),
        compress: bool = True,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.handlers = dict(handlers)
        self.access_log = access_log
        self.origins = allowed_origins(cors_origins)
        self.compress = compress

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        sent_id, accept_encoding, origin, preflight = _read_headers(scope["headers"])
        request_id = choose_request_id(sent_id)
        state = scope.get("state")
        if state is None:
            state = scope["state"] = {}
        state["request_id"] = request_id
        header = (_REQUEST_ID, request_id.encode("latin-1"))
        status = 0  # no response started yet

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = _with_id(message.get("headers"), header)
            await send(message)

        reply: Send = send_with_id
        if origin is not None and origin in self.origins:
            allowed = origin.decode("latin-1")
            if preflight and scope["method"] == "OPTIONS":
                try:
                    await answer_preflight(allowed, request_id, send_with_id)
                finally:
                    self._record(scope, status, started_at)
                return
            reply = readable(reply, allowed)
        if (
            accept_encoding is not None
            and self.compress
            and scope["method"] != "HEAD"
            and accepts_gzip(accept_encoding.decode("latin-1"))
        ):
            reply = compressing(reply)

        try:
            await self.app(scope, receive, reply)
        except ClientDisconnect as gone:
            if not status:  # nobody is left to read it, but the request ends in order
                await self._answer_failure(scope, receive, reply, send_with_id, gone)
        except Exception as failure:
            if status:
                raise  # a response half sent is broken: the server must close the connection
            await self._answer_failure(scope, receive, reply, send_with_id, failure)
        finally:
            self._record(scope, status, started_at)

    async def _answer_failure(
        self, scope: Scope, receive: Receive, reply: Send, bare: Send, failure: Exception
    ) -> None:
        """The answer to an exception raised before the response started."""
        request = Request(scope, receive)
        handler = handler_for(self.handlers, failure)
        if handler is not None:
            response = await handler(request, failure)
            await response(scope, receive, reply)
            failure.__traceback__ = None  # a reused exception would keep every traceback
            return
        if isinstance(failure, ClientDisconnect):
            response = await client_disconnected(request, failure)
        else:
            # Answered (and logged once, with its traceback) here: a server that saw the
            # exception would log it again and close a keep-alive connection in order.
            response = await internal_error(request, failure)
        await response(scope, receive, bare)

    def _record(self, scope: Scope, status: int, started_at: float) -> None:
        record(
            self.metrics,
            scope,
            status or 500,
            time.perf_counter() - started_at,
            self.access_log,
        )
