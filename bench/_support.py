"""The processes of ``bench/http_requests.py``: servers, statement counting, load generation.

Run by the benchmark as ``python bench/_support.py COMMAND ...``; nothing here is imported
by Strongroom itself, and nothing here changes product code:

``serve-hello --port P``
    A raw ASGI "hello" app under exactly the uvicorn settings of ``strongroom serve``.
``serve-counting --port P``
    The real app (``create_app`` from the ``STRONGROOM_*`` environment, as ``serve``
    reads it), with psycopg's ``Cursor.execute`` wrapped to record every statement sent
    and an extra route, ``GET /__bench/round-trips``, that hands out (and forgets) the
    statements of each request since the last call.
``load --port P --kind hello|get|post ...``
    A loopback HTTP/1.1 keep-alive load generator (asyncio protocols on uvloop, one
    request in flight per connection); prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import resource
import secrets
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any, cast

# Exactly what ``strongroom serve`` passes to ``uvicorn.run`` (entrypoints/cli.py, _serve):
# one process, one worker, uvloop, httptools, no access log.
UVICORN_OPTIONS: dict[str, Any] = {
    "loop": "uvloop",
    "http": "httptools",
    "access_log": False,
    "log_level": "info",
}
HOST = "127.0.0.1"
ROUND_TRIPS_PATH = "/__bench/round-trips"
HELLO_BODY = b"Hello, world!"
# Lines the load generator prints when its measured window starts and ends.
WINDOW_START = "window-start"
WINDOW_END = "window-end"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# The baseline: a raw ASGI hello.


async def hello_app(scope: Scope, receive: Receive, send: Send) -> None:
    """200 ``Hello, world!`` for every HTTP request; lifespan answered, nothing else."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(HELLO_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": HELLO_BODY})


def serve(app: ASGIApp, port: int) -> None:
    """Run ``app`` as ``strongroom serve`` runs Strongroom."""
    import uvicorn  # noqa: PLC0415 (only the server processes need it)

    uvicorn.run(app, host=HOST, port=port, **UVICORN_OPTIONS)


# Counting database round trips in the bench-only server process.

# The statements of the request being served (contextvars follow the request into
# Starlette's threadpool: anyio copies the context into the worker thread).
_request_statements: ContextVar[list[str] | None] = ContextVar(
    "bench_request_statements", default=None
)
_unattributed: list[str] = []
_unattributed_lock = threading.Lock()


def _query_labels() -> dict[bytes, str]:
    """The name of every catalogued query, by the exact text the adapter sends."""
    from strongroom.adapters.sql.catalog import Dialect, Q, queries_for  # noqa: PLC0415

    queries = queries_for(Dialect.POSTGRES)
    labels: dict[bytes, str] = {}
    for name in Q:
        try:
            labels[queries.text(name).encode()] = name.value
        except ValueError:  # a filter fragment, never sent on its own
            continue
    return labels


def _label(query: object, labels: dict[bytes, str]) -> str:
    if isinstance(query, str):
        query = query.encode()
    if isinstance(query, bytes | bytearray | memoryview):
        text = bytes(query)
        known = labels.get(text)
        if known is not None:
            return known
        return " ".join(text.decode(errors="replace").split())[:60]
    return type(query).__name__  # a psycopg.sql.Composed: not used on request paths


def install_statement_counter() -> None:
    """Record every statement psycopg sends (each ``Cursor.execute`` is one round trip
    outside pipeline mode; ``Connection.execute`` goes through it too, and so do the
    adapter's ``BEGIN`` and ``COMMIT``)."""
    import psycopg  # noqa: PLC0415

    labels = _query_labels()
    original = psycopg.Cursor.execute

    @functools.wraps(original)
    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        label = _label(query, labels)
        statements = _request_statements.get()
        if statements is not None:
            statements.append(label)
        else:
            with _unattributed_lock:
                _unattributed.append(label)
        return original(self, query, *args, **kwargs)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]


class CountingApp:
    """Wraps an ASGI app: records the statements of each HTTP request, and answers
    ``GET /__bench/round-trips`` with them (clearing the record)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.records: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == ROUND_TRIPS_PATH:
            await self._report(send)
            return
        statements: list[str] = []
        status = 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        token = _request_statements.set(statements)
        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            _request_statements.reset(token)
            self.records.append(
                {
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "statements": statements,
                }
            )

    async def _report(self, send: Send) -> None:
        with _unattributed_lock:
            unattributed = list(_unattributed)
            _unattributed.clear()
        records, self.records = self.records, []
        body = json.dumps({"requests": records, "unattributed": unattributed}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def counting_app() -> CountingApp:
    """The real app, configured from the environment as ``strongroom serve`` is, counting."""
    from strongroom.entrypoints.http import create_app  # noqa: PLC0415
    from strongroom.entrypoints.settings import Settings  # noqa: PLC0415

    install_statement_counter()
    return CountingApp(create_app(Settings.from_env()))


# The Python load generator.

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


class _Load:
    """One scenario: what to send, and what came back inside the measured window."""

    def __init__(self, make_request: Callable[[], bytes], start_at: float, stop_at: float):
        self.make_request = make_request
        self.start_at = start_at
        self.stop_at = stop_at
        self.completed = 0
        self.statuses: dict[int, int] = {}
        self.latencies: list[float] = []
        self.connection_errors = 0
        self.open = 0
        self.all_closed = asyncio.get_running_loop().create_future()

    def done(self, status: int, sent_at: float, now: float) -> None:
        if self.start_at <= now < self.stop_at:
            self.completed += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.latencies.append(now - sent_at)

    def closed(self) -> None:
        self.open -= 1
        if self.open == 0 and not self.all_closed.done():
            self.all_closed.set_result(None)


class _Client(asyncio.Protocol):
    """One keep-alive connection with one request in flight at a time."""

    def __init__(self, load: _Load) -> None:
        self.load = load
        self.buffer = bytearray()
        self.need = -1
        self.status = 0
        self.sent_at = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio.Transport, but behave as one.
        self.transport = cast(asyncio.Transport, transport)
        self._send_next(time.perf_counter())

    def _send_next(self, now: float) -> None:
        assert self.transport is not None
        if now >= self.load.stop_at:
            self.transport.close()
            return
        self.sent_at = now
        self.transport.write(self.load.make_request())

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while buffer:
            if self.need < 0:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(buffer[: end + 2])
                length = _CONTENT_LENGTH.search(head)
                if length is None:
                    raise RuntimeError(f"a response without Content-Length: {head[:200]!r}")
                self.status = int(head[9:12])
                self.need = end + 4 + int(length[1])
            if len(buffer) < self.need:
                return
            del buffer[: self.need]
            self.need = -1
            now = time.perf_counter()
            self.load.done(self.status, self.sent_at, now)
            self._send_next(now)

    def connection_lost(self, exc: Exception | None) -> None:
        if time.perf_counter() < self.load.stop_at:
            self.load.connection_errors += 1
        self.load.closed()


def request_factory(kind: str, port: int, path: str, token: str | None) -> Callable[[], bytes]:
    """What one connection sends for ``kind``; POST bodies name a new backup every time."""
    head = f"Host: {HOST}:{port}\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    if kind != "post":
        fixed = f"GET {path} HTTP/1.1\r\n{head}\r\n".encode()
        return lambda: fixed
    prefix = f"bench-{secrets.token_hex(4)}-"
    start = f"POST {path} HTTP/1.1\r\n{head}Content-Type: application/json\r\n".encode()
    counter = iter(range(1, sys.maxsize))

    def post() -> bytes:
        body = f'{{"name":"{prefix}{next(counter)}","kind":"manual"}}'.encode()
        return start + f"Content-Length: {len(body)}\r\n\r\n".encode() + body

    return post


async def run_load(
    *,
    port: int,
    make_request: Callable[[], bytes],
    connections: int,
    warmup: float,
    duration: float,
) -> dict[str, Any]:
    """Drive the server for ``warmup`` + ``duration`` seconds; figures of the latter."""
    loop = asyncio.get_running_loop()
    began = time.perf_counter()
    load = _Load(make_request, began + warmup, began + warmup + duration)
    for _ in range(connections):
        await loop.create_connection(lambda: _Client(load), HOST, port)
        load.open += 1
    await asyncio.sleep(max(0.0, load.start_at - time.perf_counter()))
    cpu_before = _own_cpu()
    print(WINDOW_START, flush=True)  # the driver samples the server's CPU time now
    await asyncio.sleep(max(0.0, load.stop_at - time.perf_counter()))
    print(WINDOW_END, flush=True)
    cpu_after = _own_cpu()
    try:
        await asyncio.wait_for(asyncio.shield(load.all_closed), timeout=30)
    except TimeoutError:
        load.connection_errors += load.open
    latencies = sorted(load.latencies)
    return {
        "requests": load.completed,
        "seconds": duration,
        "rps": load.completed / duration,
        "statuses": {str(status): count for status, count in sorted(load.statuses.items())},
        "p50_ms": _percentile(latencies, 50) * 1000,
        "p99_ms": _percentile(latencies, 99) * 1000,
        "connection_errors": load.connection_errors,
        "loadgen_cpu": (cpu_after - cpu_before) / duration,
    }


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _percentile(ordered: list[float], percent: float) -> float:
    if not ordered:
        return float("nan")
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(percent) - 1]


# Command line.


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("serve-hello", "serve-counting"):
        command = commands.add_parser(name)
        command.add_argument("--port", type=int, required=True)
    load = commands.add_parser("load")
    load.add_argument("--port", type=int, required=True)
    load.add_argument("--kind", choices=["hello", "get", "post"], required=True)
    load.add_argument("--path", default="/")
    load.add_argument("--token", default=None)
    load.add_argument("--connections", type=int, default=32)
    load.add_argument("--warmup", type=float, default=1.0)
    load.add_argument("--duration", type=float, default=5.0)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve-hello":
        serve(hello_app, arguments.port)
    elif arguments.command == "serve-counting":
        serve(counting_app(), arguments.port)
    else:
        import uvloop  # noqa: PLC0415

        make_request = request_factory(
            arguments.kind, arguments.port, arguments.path, arguments.token
        )
        result = uvloop.run(
            run_load(
                port=arguments.port,
                make_request=make_request,
                connections=arguments.connections,
                warmup=arguments.warmup,
                duration=arguments.duration,
            )
        )
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
