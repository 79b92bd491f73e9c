"""Cross-origin browser calls, allowed only from the configured origins (contract 13,
``STRONGROOM_CORS_ORIGINS``; none by default).

The application's layer (``layer.py``) finds ``Origin`` in its one scan of the request
headers. A request from an allowed origin gets ``Access-Control-Allow-Origin`` (its own
origin) and the headers a script may read; its preflight is answered at once, 204. Any
other request, a disallowed origin's preflight included, goes on untouched and gets no
CORS header, so the browser refuses the script the answer; so does the last-resort 500 of
an unhandled failure. Bearer tokens travel in ``Authorization``, not in cookies, so
credentials mode is never allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Send

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


def allowed_origins(origins: Iterable[str]) -> frozenset[bytes]:
    """The configured origins as a request's ``Origin`` header carries them."""
    return frozenset(origin.encode("latin-1") for origin in origins)


def readable(send: Send, origin: str) -> Send:
    """``send`` for a request from the allowed ``origin``: its answer says the origin may
    read it and the headers a script may read."""

    async def marked(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers["Access-Control-Allow-Origin"] = origin
            headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
            headers.add_vary_header("Origin")
        await send(message)

    return marked


async def answer_preflight(origin: str, request_id: str, send: Send) -> None:
    """The 204 that allows the allowed ``origin``'s preflight."""
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
