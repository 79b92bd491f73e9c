"""gzip for answers of 1 KiB and more when the client accepts it (contract 13).

The application's layer (``layer.py``) reads ``Accept-Encoding`` in its one scan of the
request headers and wraps ``send`` in ``compressing`` only when the client accepts gzip,
so a client that does not (``wrk`` and most service clients) costs nothing here. It
compresses only what is worth it and safe to: a whole JSON or text body sent in one
message. A streamed body (a download, which is already packed or is a database dump) and
any body of another type, or already encoded, goes out untouched with its
``Content-Length``.
"""

from __future__ import annotations

import functools
import zlib

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Send

MINIMUM_SIZE = 1024
LEVEL = 1  # JSON pages shrink about 10x already; level 6 takes 1.7 times as long for 8 % less
_GZIP_WBITS = 31  # zlib's gzip container (header with mtime 0, CRC-32 trailer)
_COMPRESSIBLE = (b"application/json", b"text/")
_NO_BODY_STATUSES = frozenset({204, 206, 304})


@functools.lru_cache(maxsize=256)
def accepts_gzip(value: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip: ``gzip`` (or ``x-gzip``, or
    ``*`` when gzip is not named) with a quality above zero (RFC 9110 12.5.3)."""
    star = False
    for item in value.split(","):
        coding, _, params = item.partition(";")
        coding = coding.strip().lower()
        if coding not in ("gzip", "x-gzip", "*"):
            continue
        allowed = _quality(params) > 0
        if coding == "*":
            star = allowed
        else:
            return allowed
    return star


def _quality(params: str) -> float:
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def compressing(send: Send, minimum_size: int = MINIMUM_SIZE, level: int = LEVEL) -> Send:
    """``send`` for a client whose ``Accept-Encoding`` allows gzip (and not to a ``HEAD``):
    a single-message JSON or text answer of ``minimum_size`` bytes and more goes out
    compressed, with ``Content-Encoding``, its new ``Content-Length`` and ``Vary:
    Accept-Encoding``; anything else as it comes."""
    start: Message | None = None

    async def compressed(message: Message) -> None:
        nonlocal start
        kind = message["type"]
        if kind == "http.response.start":
            if _eligible(message, minimum_size):
                start = message  # held until the body says whether to compress
                return
            await send(message)
        elif start is not None:
            held, start = start, None
            body = message.get("body", b"")
            if (
                kind == "http.response.body"
                and not message.get("more_body", False)
                and len(body) >= minimum_size
            ):
                packed = zlib.compress(body, level, wbits=_GZIP_WBITS)
                headers = MutableHeaders(scope=held)
                headers["Content-Encoding"] = "gzip"
                headers["Content-Length"] = str(len(packed))
                headers.add_vary_header("Accept-Encoding")
                message = {**message, "body": packed}
            await send(held)
            await send(message)
        else:
            await send(message)

    return compressed


def _eligible(start: Message, minimum_size: int) -> bool:
    """Whether the answer may be compressed: JSON or text, not encoded already, and not
    announced (``Content-Length``) as smaller than ``minimum_size``."""
    if start["status"] in _NO_BODY_STATUSES:
        return False
    content_type = b""
    for name, value in start.get("headers", ()):
        if name == b"content-encoding":
            return False
        if name == b"content-type":
            content_type = value.lower()
        elif name == b"content-length" and value.isdigit() and int(value) < minimum_size:
            return False
    return content_type.startswith(_COMPRESSIBLE)
