"""Cross-origin browser calls, allowed only from the configured origins (contract 13,
``STRONGROOM_CORS_ORIGINS``; none by default, and then this middleware is not installed).

A request from an allowed origin gets ``Access-Control-Allow-Origin`` (its own origin) and
the headers a script may read; its preflight is answered here, 204. Any other request,
a disallowed origin's preflight included, goes on untouched and gets no CORS header, so
the browser refuses the script the answer. Bearer tokens travel in ``Authorization``, not
in cookies, so credentials mode is never allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strongroom.adapters.http.request_ids import choose_request_id

ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE"
ALLOWED_HEADERS = "Authorization, Content-Type, Idempotency-Key, If-Match, X-Request-ID"
EXPOSED_HEADERS = "ETag, Location, Retry-After, X-Request-ID"
PREFLIGHT_MAX_AGE = "600"


def parse_origins(value: str) -> tuple[str, ...]:
    """The origins of a comma-separated list (``https://app.example.com,
    http://localhost:3000``), in the form browsers send them; ``ValueError`` names one that
    is not ``scheme://host[:port]``."""
    origins: list[str] = []
    for item in value.split(","):
        origin = item.strip().rstrip("/").lower()
        if not origin:
            continue
        parts = urlsplit(origin)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path
            or parts.query
            or parts.fragment
            or parts.username is not None
        ):
            raise ValueError(
                f"STRONGROOM_CORS_ORIGINS: {item.strip()!r} is not an origin (scheme://host[:port])"
            )
        origins.append(origin)
    return tuple(dict.fromkeys(origins))


class CorsMiddleware:
    """Answers allowed origins' preflights and marks their other answers readable."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(origin.encode("latin-1") for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = None
        preflight = False
        sent_id = None
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value
            elif name == b"access-control-request-method":
                preflight = scope["method"] == "OPTIONS"
            elif name == b"x-request-id":
                sent_id = value.decode("latin-1")
        if origin is None or origin not in self.origins:
            await self.app(scope, receive, send)
            return
        allowed = origin.decode("latin-1")
        if preflight:
            await self._preflight(allowed, choose_request_id(sent_id), send)
            return

        async def readable(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Access-Control-Allow-Origin"] = allowed
                headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
                headers.add_vary_header("Origin")
            await send(message)

        await self.app(scope, receive, readable)

    @staticmethod
    async def _preflight(origin: str, request_id: str, send: Send) -> None:
        headers = {
            "access-control-allow-origin": origin,
            "access-control-allow-methods": ALLOWED_METHODS,
            "access-control-allow-headers": ALLOWED_HEADERS,
            "access-control-max-age": PREFLIGHT_MAX_AGE,
            "vary": "Origin",
            "x-request-id": request_id,
        }
        await send(
            {
                "type": "http.response.start",
                "status": 204,
                "headers": [(k.encode(), v.encode("latin-1")) for k, v in headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": b""})
