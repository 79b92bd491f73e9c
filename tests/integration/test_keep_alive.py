"""A 500 does not cost the client its keep-alive connection (issue 12, finding 9).

Over a real uvicorn server (httptools, as ``strongroom serve``) and one raw socket: a
handler that raises answers the ``internal`` envelope, and the next request on the same
connection is answered as well. Starlette's last-resort handler re-raises after sending
the 500, and uvicorn then closes the connection; our request-id middleware answers the 500
itself instead.
"""

from __future__ import annotations

import json
import logging
import socket

import pytest
from live_server import LiveServer
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strongroom.adapters.http.app import app_for
from support.world import make_facade


async def _boom(_request: Request) -> Response:
    raise RuntimeError("a bug")


def _exchange(sock: socket.socket, path: str) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on ``sock`` and its whole response (by Content-Length)."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines)
    }
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection mid-body")
        body += chunk
    return int(status_line.split()[1]), headers, body


def test_the_connection_survives_a_500(caplog: pytest.LogCaptureFixture) -> None:
    """A handler raises: 500 ``internal`` with the request id, logged once with its
    traceback; the same connection then serves ``/healthz`` and the 500 again."""
    app = app_for(make_facade())
    app.router.routes.append(Route("/boom", _boom))
    with (
        caplog.at_level(logging.ERROR),
        LiveServer(app) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock,
    ):
        status, headers, body = _exchange(sock, "/boom")
        assert status == 500
        error = json.loads(body)["error"]
        assert error["code"] == "internal"
        assert error["request_id"] == headers["x-request-id"]
        assert headers.get("connection", "").lower() != "close"
        status, _, _ = _exchange(sock, "/healthz")
        assert status == 200
        status, _, _ = _exchange(sock, "/boom")
        assert status == 500
    failures = [r for r in caplog.records if r.exc_info and "a bug" in str(r.exc_info[1])]
    assert len(failures) == 2  # each once, by our handler; never again by the server
