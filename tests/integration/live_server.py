"""A real uvicorn server in a background thread, and the HTTP clients that talk to it.

    with LiveServer(app) as server, server.client() as client:
        client.get("/healthz")

The server listens on a socket bound to a free loopback port before uvicorn starts (no race
for the port), runs the app's lifespan (``lifespan="on"``: a failing start-up fails the
test), and is shut down cleanly: uvicorn closes its connections and runs the lifespan's
shutdown, which closes the database pool.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self, TypeVar

import attrs
import httpx2
import uvicorn

R = TypeVar("R")

STARTUP_TIMEOUT = 30.0
SHUTDOWN_TIMEOUT = 15.0
# A request that takes longer than this is a hang, whatever the test asserts.
CLIENT_TIMEOUT = 30.0


class LiveServer:
    """``app`` served by uvicorn (uvloop, httptools, as ``strongroom serve``) on 127.0.0.1."""

    def __init__(self, app: Any) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=2048)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            loop="uvloop",
            http="httptools",
            ws="none",
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=int(SHUTDOWN_TIMEOUT / 3),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._listener]},
            name=f"uvicorn-{self.port}",
            daemon=True,
        )

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive():
                self._listener.close()
                raise RuntimeError("the server stopped during start-up (see the log)")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("the server did not start in time")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Ask uvicorn to shut down and wait until it has (lifespan shutdown included)."""
        self._server.should_exit = True
        self._thread.join(SHUTDOWN_TIMEOUT)
        self._listener.close()
        if self._thread.is_alive():
            raise TimeoutError("the server did not shut down in time")

    def client(self, connections: int = 10) -> httpx2.Client:
        """A client of this server with room for ``connections`` parallel requests."""
        return client_for(self.url, connections)


def client_for(url: str, connections: int = 10) -> httpx2.Client:
    """An HTTP client of ``url`` (never through a proxy of the environment)."""
    return httpx2.Client(
        base_url=url,
        trust_env=False,
        timeout=CLIENT_TIMEOUT,
        limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


@attrs.frozen
class Timed:
    """A response and how long it took."""

    response: httpx2.Response
    seconds: float


def all_at_once(
    client: httpx2.Client, count: int, send: Callable[[httpx2.Client, int], httpx2.Response]
) -> list[Timed]:
    """``send(client, 0..count-1)`` on ``count`` threads released together by a barrier."""
    barrier = threading.Barrier(count)

    def released(index: int) -> Timed:
        barrier.wait()
        started = time.monotonic()
        response = send(client, index)
        return Timed(response, time.monotonic() - started)

    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="client") as pool:
        return list(pool.map(released, range(count)))


def timed(send: Callable[[], httpx2.Response]) -> Timed:
    """One request and how long it took."""
    started = time.monotonic()
    response = send()
    return Timed(response, time.monotonic() - started)
