"""Every response carries ``X-Request-ID``: the client's own (1..200 characters from ``!``
to ``~``) or a generated ``req_<uuid>``; every request is timed and counted (metrics.py).

The middleware is the outermost layer of ours, so it is also where a client that went away
mid-request ends quietly (contract 13), and where any other exception that no inner handler
takes becomes the 500 ``internal`` envelope: Starlette's own last resort would send the same
500 and then re-raise it, and the server would log it a second time and close the client's
keep-alive connection.
"""

from __future__ import annotations

import os
import random
import re
import time

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strongroom.adapters.http.errors import client_disconnected, internal_error
from strongroom.adapters.http.metrics import HttpMetrics, record

_CLIENT_ID = re.compile(r"[!-~]{1,200}")


# Request ids need to be unique, not secret: a generator seeded from the OS (and again in
# every forked child) makes a version-4 UUID in a third of uuid4()'s time, which reads the
# OS's random source on every call.
_ids = random.Random()  # noqa: S311 - ids are correlation keys, not secrets
os.register_at_fork(after_in_child=_ids.seed)
_VERSION_4 = (0xF000 << 64, 0x4000 << 64)
_VARIANT_RFC = (0xC000 << 48, 0x8000 << 48)


def new_request_id() -> str:
    """A generated request id: ``req_`` and a random version-4 UUID."""
    bits = _ids.getrandbits(128)
    bits = (bits & ~_VERSION_4[0]) | _VERSION_4[1]
    bits = (bits & ~_VARIANT_RFC[0]) | _VARIANT_RFC[1]
    hexed = f"{bits:032x}"
    return f"req_{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def choose_request_id(sent: str | None) -> str:
    """Echo a well-formed client id, or generate one."""
    if sent is not None and _CLIENT_ID.fullmatch(sent):
        return sent
    return new_request_id()


class RequestIdMiddleware:
    """The outermost layer of ours, one pure-ASGI layer for what every request needs:
    assigns the request id (in ``request.state.request_id``) and sets the header, times
    and counts the request into ``metrics`` (with an access event when ``access_log``), and
    ends a request whose client went away (``ClientDisconnect``) without an error.

    One layer, not one per concern: each layer wraps ``send`` in a closure of its own, and
    ``GET /healthz`` spent a fifth of its time in the two it had.
    """

    def __init__(self, app: ASGIApp, metrics: HttpMetrics, access_log: bool = False) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        sent = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                sent = value.decode("latin-1")
                break
        request_id = choose_request_id(sent)
        state = scope.get("state")
        if state is None:
            state = scope["state"] = {}
        state["request_id"] = request_id
        header = (b"x-request-id", request_id.encode("latin-1"))
        status = 0  # no response started yet

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = message.get("headers") or []
                message["headers"] = [*(h for h in headers if h[0] != b"x-request-id"), header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except ClientDisconnect as gone:
            if not status:
                response = await client_disconnected(Request(scope, receive), gone)
                await response(scope, receive, send_with_id)
        except Exception as failure:
            if status:
                raise  # a response half sent is broken: the server must close the connection
            # Answered (and logged once, with its traceback) here rather than by Starlette's
            # last-resort handler, which re-raises after sending the 500, so that the server
            # closes a keep-alive connection that is in perfect order.
            response = await internal_error(Request(scope, receive), failure)
            await response(scope, receive, send_with_id)
        finally:
            record(
                self.metrics,
                scope,
                status or 500,
                time.perf_counter() - started_at,
                self.access_log,
            )
