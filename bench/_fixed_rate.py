"""An open-loop HTTP/1.1 client at a fixed rate, for latency below saturation (wrk2-style).

    python bench/_fixed_rate.py --port P --path /v1/... --rate 150 [--method POST] ...

Requests are due at a fixed interval (``1 / rate``) whatever the server does; each due
request goes out on the first idle keep-alive connection of ``--connections`` (one request
in flight each). Latency runs from the moment a request was due, not from the moment it was
sent, so a server that falls behind is charged for the queue it builds (no coordinated
omission, as in wrk2). Requests due in the warm-up are sent but not recorded. POST bodies
name a new backup every time. Prints one JSON line. Run by ``fast_path.py`` in a process of
its own, on uvloop; it only ever connects to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

HOST = "127.0.0.1"
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
_DRAIN_TIMEOUT = 30.0
_REQUEST_TIMEOUT = 10.0
# uvloop rounds a timer to whole milliseconds, and one under 0.5 ms runs at once: sleeping
# until each due time spun a core at rates above 2 000/s (a core taken from the server).
_SHORTEST_SLEEP = 0.001


def request_maker(method: str, path: str, port: int, token: str | None) -> Callable[[], bytes]:
    """What to send: a fixed GET, or a POST naming a new backup each time."""
    head = f"Host: {HOST}:{port}\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    if method != "POST":
        fixed = f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode()
        return lambda: fixed
    start = f"POST {path} HTTP/1.1\r\n{head}Content-Type: application/json\r\n".encode()
    prefix = f"rate-{secrets.token_hex(4)}-"
    counter = iter(range(1, sys.maxsize))

    def post() -> bytes:
        body = f'{{"name":"{prefix}{next(counter)}","kind":"manual"}}'.encode()
        return start + f"Content-Length: {len(body)}\r\n\r\n".encode() + body

    return post


async def read_status(reader: asyncio.StreamReader) -> int:
    """Read one response (Content-Length framed); its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = _CONTENT_LENGTH.search(head)
    if length is None:
        raise ValueError(f"a response without Content-Length: {head[:120]!r}")
    await reader.readexactly(int(length[1]))
    return int(head[9:12])


class Recorder:
    """What came back for the requests due in the measured window."""

    def __init__(self, measure_from: float) -> None:
        self.measure_from = measure_from
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.errors = 0

    def done(self, due: float, status: int, now: float) -> None:
        if due >= self.measure_from:
            self.latencies.append(now - due)
            self.statuses[status] = self.statuses.get(status, 0) + 1


async def connection_worker(
    queue: asyncio.Queue[float | None], make: Callable[[], bytes], recorder: Recorder, port: int
) -> None:
    """One keep-alive connection: sends each due request it takes from the queue. A failed
    request counts as an error and the connection is opened again."""
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while (due := await queue.get()) is not None:
        try:
            if connection is None:
                connection = await asyncio.wait_for(asyncio.open_connection(HOST, port), 10)
            reader, writer = connection
            writer.write(make())
            status = await asyncio.wait_for(read_status(reader), _REQUEST_TIMEOUT)
        except (OSError, ValueError, asyncio.IncompleteReadError, TimeoutError):
            recorder.errors += 1
            if connection is not None:
                connection[1].close()
            connection = None
            continue
        recorder.done(due, status, time.perf_counter())
    if connection is not None:
        connection[1].close()


async def schedule(
    queue: asyncio.Queue[float | None], start: float, end: float, rate: float
) -> tuple[int, float]:
    """Put each request in the queue when it is due (at 1 ms ticks at the finest: a request
    sent late is charged its lateness, latency runs from the due time); how many, and the
    worst lateness."""
    interval = 1.0 / rate
    index, worst_lag = 0, 0.0
    while (due := start + index * interval) < end:
        now = time.perf_counter()
        if due > now:
            await asyncio.sleep(max(due - now, _SHORTEST_SLEEP))
            now = time.perf_counter()
        while due <= now and due < end:  # everything due by now (sleeps are coarse)
            worst_lag = max(worst_lag, now - due)
            queue.put_nowait(due)
            index += 1
            due = start + index * interval
    return index, worst_lag


def _percentile(ordered: list[float], percent: int) -> float:
    if len(ordered) < 2:
        return ordered[0] if ordered else float("nan")
    return statistics.quantiles(ordered, n=100, method="inclusive")[percent - 1]


async def run(arguments: argparse.Namespace) -> dict[str, Any]:
    """The whole run; figures of the measured window."""
    make = request_maker(arguments.method, arguments.path, arguments.port, arguments.token)
    queue: asyncio.Queue[float | None] = asyncio.Queue()
    start = time.perf_counter() + 0.2  # time to open the connections
    measure_from = start + arguments.warmup
    end = measure_from + arguments.duration
    recorder = Recorder(measure_from)
    workers = [
        asyncio.create_task(connection_worker(queue, make, recorder, arguments.port))
        for _ in range(arguments.connections)
    ]
    cpu_before = _cpu()
    sent, worst_lag = await schedule(queue, start, end, arguments.rate)
    for _ in workers:
        queue.put_nowait(None)
    _, pending = await asyncio.wait(workers, timeout=_DRAIN_TIMEOUT)
    for task in pending:
        task.cancel()
    unanswered = queue.qsize() + len(pending)
    latencies = sorted(recorder.latencies)
    return {
        "rate": arguments.rate,
        "seconds": arguments.duration,
        "sent": sent,
        "completed": len(latencies),
        "achieved_rps": len(latencies) / arguments.duration,
        "p50_ms": _percentile(latencies, 50) * 1000,
        "p99_ms": _percentile(latencies, 99) * 1000,
        "max_ms": (latencies[-1] if latencies else float("nan")) * 1000,
        "statuses": {str(status): n for status, n in sorted(recorder.statuses.items())},
        "errors": recorder.errors + unanswered,
        "worst_send_lag_ms": worst_lag * 1000,
        "client_cpu": (_cpu() - cpu_before) / (time.perf_counter() - start),
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--method", choices=["GET", "POST"], default="GET")
    parser.add_argument("--token", default=None)
    parser.add_argument("--rate", type=float, required=True, help="requests per second")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=5.0)
    return parser


def main(argv: list[str] | None = None) -> int:
    import uvloop  # noqa: PLC0415 (the only third-party import)

    arguments = _parser().parse_args(argv)
    if arguments.rate <= 0:
        raise SystemExit("--rate must be positive")
    print(json.dumps(uvloop.run(run(arguments))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
