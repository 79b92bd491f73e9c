"""A TCP proxy that carries the client's bytes at a set rate, as a real uplink would: a
transfer that would take a fraction of a second over loopback takes seconds, long enough
to watch its progress.

    with SlowLink(("127.0.0.1", port), upload_rate=8 * MIB) as link:
        url = f"http://127.0.0.1:{link.port}"

Bytes from the client to the server share one budget of ``upload_rate`` bytes a second
(over every connection, as parallel parts share one uplink); the server's answers pass
at full speed; the proxy's receive window is small, so the client's bytes wait on its
side, as they would behind a slow uplink. One thread forwards each direction of each
connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Self

_CHUNK = 16 * 1024
_WINDOW = 64 * 1024


class _Budget:
    """Hands out send slots so that the bytes sent average ``rate`` a second."""

    def __init__(self, rate: float) -> None:
        self._rate = rate
        self._lock = threading.Lock()
        self._free_at = time.monotonic()

    def spend(self, amount: int) -> None:
        """Wait until ``amount`` more bytes fit in the rate."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._free_at)
            self._free_at = start + amount / self._rate
            wait = self._free_at - now
        if wait > 0:
            time.sleep(wait)


class SlowLink:
    """Forwards 127.0.0.1:``port`` to ``upstream``, the client's bytes at ``upload_rate``."""

    def __init__(self, upstream: tuple[str, int], upload_rate: float) -> None:
        self._upstream = upstream
        self._budget = _Budget(upload_rate)
        self._listener = socket.socket()
        # A small receive window, as on a link that is really slow: otherwise the kernel
        # takes megabytes from the client at once, faster than the rate.
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _WINDOW)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self.port: int = self._listener.getsockname()[1]
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="slow-link", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The proxied server's URL."""
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop accepting and close every connection."""
        with self._lock:
            self._closed = True
            opened = list(self._sockets)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for each in opened:
            with contextlib.suppress(OSError):
                each.close()
        self._thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets.update((client, server))
            for source, target, throttled in ((client, server, True), (server, client, False)):
                threading.Thread(
                    target=self._pump, args=(source, target, throttled), daemon=True
                ).start()

    def _pump(self, source: socket.socket, target: socket.socket, throttled: bool) -> None:
        try:
            while chunk := source.recv(_CHUNK):
                if throttled:
                    self._budget.spend(len(chunk))
                target.sendall(chunk)
            target.shutdown(socket.SHUT_WR)
        except OSError:
            for each in (source, target):
                with contextlib.suppress(OSError):
                    each.close()
