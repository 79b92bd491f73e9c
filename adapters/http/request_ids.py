"""Every response carries ``X-Request-ID``: the client's own (1..200 characters from ``!``
to ``~``) or a generated ``req_<uuid>``.

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

from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strongroom.adapters.http.errors import client_disconnected, internal_error

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
    """Assigns the request id (in ``request.state.request_id``) and sets the header; ends a
    request whose client went away (``ClientDisconnect``) without an error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = next(
            (
                value.decode("latin-1")
                for name, value in scope["headers"]
                if name == b"x-request-id"
            ),
            None,
        )
        request_id = choose_request_id(sent)
        scope.setdefault("state", {})["request_id"] = request_id

        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                MutableHeaders(scope=message)["X-Request-ID"] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except ClientDisconnect as gone:
            if not started:
                response = await client_disconnected(Request(scope, receive), gone)
                await response(scope, receive, send_with_id)
        except Exception as failure:
            if started:
                raise  # a response half sent is broken: the server must close the connection
            # Answered (and logged once, with its traceback) here rather than by Starlette's
            # last-resort handler, which re-raises after sending the 500, so that the server
            # closes a keep-alive connection that is in perfect order.
            response = await internal_error(Request(scope, receive), failure)
            await response(scope, receive, send_with_id)
