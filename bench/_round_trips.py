"""Counting database round trips from outside the server: a loopback TCP proxy to PostgreSQL.

The server under test reaches PostgreSQL through :class:`RoundTripProxy` and is otherwise
untouched (a black box). A round trip is one turn of the traffic's direction on a
connection: bytes from the client (the server under test) followed by bytes from
PostgreSQL. However many TCP segments or protocol messages either burst holds, it is one
turn, so pipelined statements sent together count once, as they cost once.

The proxy also reads the client side of the PostgreSQL protocol (never the answers) to
name each turn after the statements it carried (``SELECT backups``, ``BEGIN``, ...); the
names are for reading, the count does not depend on them. The server's connections must
not use TLS (``sslmode=disable``), or the names are missing; the count is still right.
"""

from __future__ import annotations

import re
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator

_TICK = 0.05
_UNTYPED_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest: a startup follows
_FROM = re.compile(r"\bFROM\s+([\w.\"]+)", re.IGNORECASE)
_TARGET = re.compile(r"^(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([\w.\"]+)", re.IGNORECASE)
_LOCKS = ("FOR NO KEY UPDATE", "FOR UPDATE", "FOR SHARE", "FOR KEY SHARE")


def summarise(query: str) -> str:
    """A short name for a statement: its verb and table (``SELECT backups FOR UPDATE``)."""
    text = " ".join(query.split())
    upper = text.upper()
    target = _TARGET.match(text)
    if target is not None:
        return f"{target[1].split()[0].upper()} {target[2]}"
    if upper.startswith("SELECT"):
        table = _FROM.search(text)
        name = f"SELECT {table[1]}" if table else text[:40]
        lock = next((lock for lock in _LOCKS if lock in upper), None)
        return f"{name} {lock}" if lock else name
    return text[:40]


def _cstring(payload: bytes, start: int) -> tuple[str, int]:
    end = payload.index(b"\0", start)
    return payload[start:end].decode(errors="replace"), end + 1


class FrontendReader:
    """Splits one connection's client-to-server bytes into protocol messages and names
    the statements among them."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.untyped = True  # the startup packet (and SSL/GSS requests) have no type byte
        self.prepared: dict[str, str] = {}

    def feed(self, data: bytes) -> list[str]:
        """The names of the statements in the complete messages received so far."""
        self.buffer += data
        names: list[str] = []
        for kind, payload in self._messages():
            name = self._name(kind, payload)
            if name:
                names.append(name)
        return names

    def _messages(self) -> Iterator[tuple[bytes, bytes]]:
        while True:
            if self.untyped:
                if len(self.buffer) < 8:
                    return
                length, code = struct.unpack("!II", self.buffer[:8])
                if len(self.buffer) < length:
                    return
                del self.buffer[:length]
                self.untyped = code in _UNTYPED_REQUESTS
                continue
            if len(self.buffer) < 5:
                return
            (length,) = struct.unpack("!I", self.buffer[1:5])
            if len(self.buffer) < 1 + length:
                return
            kind, payload = bytes(self.buffer[:1]), bytes(self.buffer[5 : 1 + length])
            del self.buffer[: 1 + length]
            yield kind, payload

    def _name(self, kind: bytes, payload: bytes) -> str | None:
        try:
            if kind == b"Q":  # simple query
                return summarise(_cstring(payload, 0)[0])
            if kind == b"P":  # Parse: statement name, query
                statement, at = _cstring(payload, 0)
                summary = summarise(_cstring(payload, at)[0])
                if statement:
                    self.prepared[statement] = summary
                    return f"prepare {summary}"
                return summary
            if kind == b"B":  # Bind: portal, statement (a named one runs a prepared query)
                _, at = _cstring(payload, 0)
                statement, _ = _cstring(payload, at)
                return self.prepared.get(statement, statement) if statement else None
        except ValueError:
            return "?"
        return None


class _Pair:
    """One proxied connection: both sockets, the direction of the last bytes, and the
    statements of the client's current burst."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.last_from_client: bool | None = None
        self.burst: list[str] = []
        self.reader = FrontendReader()


class RoundTripProxy:
    """Forwards ``127.0.0.1:port`` to ``upstream``, recording every round trip."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._pairs: dict[socket.socket, _Pair] = {}
        self._turns: list[tuple[str, ...]] = []
        self._lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="round-trips", daemon=True)
        self._thread.start()

    def mark(self) -> int:
        """A position in the record of round trips, for :meth:`since`."""
        with self._lock:
            return len(self._turns)

    def since(self, mark: int) -> list[tuple[str, ...]]:
        """The round trips after ``mark``, each named by the statements it carried."""
        with self._lock:
            return list(self._turns[mark:])

    def wait_quiet(self, quiet: float = 0.03, timeout: float = 2.0) -> None:
        """Return once no byte has passed for ``quiet`` seconds (at most ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                idle = time.monotonic() - self._last_activity
            if idle >= quiet:
                return
            time.sleep(quiet / 3)

    def close(self) -> None:
        """Stop forwarding and close every socket."""
        self._stopped.set()
        self._thread.join(5)
        for sock in list(self._pairs):
            sock.close()
        self._pairs.clear()
        self._listener.close()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            readable, _, _ = select.select([self._listener, *self._pairs], [], [], _TICK)
            for ready in readable:
                if ready is self._listener:
                    self._accept()
                elif ready in self._pairs:
                    self._forward(ready)

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, upstream)
        self._pairs[client] = pair
        self._pairs[upstream] = pair

    def _forward(self, source: socket.socket) -> None:
        pair = self._pairs[source]
        from_client = source is pair.client
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(pair)
            return
        self._record(pair, from_client, data)
        try:
            (pair.upstream if from_client else pair.client).sendall(data)
        except OSError:
            self._drop(pair)

    def _record(self, pair: _Pair, from_client: bool, data: bytes) -> None:
        with self._lock:
            self._last_activity = time.monotonic()
            if from_client:
                if pair.last_from_client is not True:
                    pair.burst = []
                pair.burst += pair.reader.feed(data)
            elif pair.last_from_client is True:
                self._turns.append(tuple(pair.burst))
            pair.last_from_client = from_client

    def _drop(self, pair: _Pair) -> None:
        for sock in (pair.client, pair.upstream):
            self._pairs.pop(sock, None)
            sock.close()
