"""A TCP proxy for fault tests: cut every connection, stop forwarding (a paused server), or
refuse every connection (a server that is down).

One thread forwards bytes between each accepted client and its own upstream connection.
``cut`` closes every pair (as a server crash or restart would); ``pause`` stops reading
from anyone, so statements hang as they would against a stopped process or a silent
network, until ``resume``; ``go_down`` cuts every pair and closes each new connection as
soon as it is accepted, until ``come_back``.
"""

from __future__ import annotations

import select
import socket
import threading
from types import TracebackType
from typing import Self

_TICK = 0.02


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._peers: dict[socket.socket, socket.socket] = {}
        self._lock = threading.Lock()
        self._paused = False
        self._down = False
        self._stopped = False
        self._cut_requested = threading.Event()
        self._cut_done = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="tcp-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        """Close every open connection (new ones are still accepted)."""
        self._cut_done.clear()
        self._cut_requested.set()
        if not self._cut_done.wait(5):
            raise TimeoutError("the proxy did not cut its connections")

    def pause(self) -> None:
        """Stop forwarding anything, in either direction."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        """Forward again."""
        with self._lock:
            self._paused = False

    def go_down(self) -> None:
        """Close every open connection and every new one at once, until ``come_back``."""
        with self._lock:
            self._down = True
        self.cut()

    def come_back(self) -> None:
        """Accept and forward connections again."""
        with self._lock:
            self._down = False

    def close(self) -> None:
        """Stop the proxy and close everything."""
        self._stopped = True
        self._thread.join(5)
        self._close_pairs()
        self._listener.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _close_pairs(self) -> None:
        for peer in list(self._peers):
            peer.close()
        self._peers.clear()

    def _serve(self) -> None:
        while not self._stopped:
            if self._cut_requested.is_set():
                self._close_pairs()
                self._cut_requested.clear()
                self._cut_done.set()
            with self._lock:
                paused = self._paused
            watched = [self._listener] if paused else [self._listener, *self._peers]
            readable, _, _ = select.select(watched, [], [], _TICK)
            for ready in readable:
                if ready is self._listener:
                    self._accept()
                elif ready in self._peers:
                    self._forward(ready)

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        with self._lock:
            down = self._down
        if down:
            client.close()
            return
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self._peers[client] = upstream
        self._peers[upstream] = client

    def _forward(self, source: socket.socket) -> None:
        target = self._peers[source]
        try:
            data = source.recv(65536)
            if data:
                target.sendall(data)
                return
        except OSError:
            pass
        for end in (source, target):
            self._peers.pop(end, None)
            end.close()
