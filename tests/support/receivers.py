"""A webhook receiver on loopback: a real HTTP server that records what it is sent and
answers each request with the next status of a script (then 204)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs


@attrs.define
class Received:
    """One request: its headers (lower-case names) and body."""

    headers: dict[str, str]
    body: str


@attrs.define
class Receiver:
    """What a receiver was sent, and what it answers."""

    url: str
    statuses: list[int] = attrs.field(factory=list)
    received: list[Received] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        """Until ``count`` requests arrived (fails after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.received)} requests arrived, not {count}")


@contextmanager
def receiver(statuses: list[int] | None = None) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 until the block ends."""
    state = Receiver("", list(statuses or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length).decode()
            with state.lock:
                state.received.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = state.statuses.pop(0) if state.statuses else 204
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
