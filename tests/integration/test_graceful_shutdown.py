"""``strongroom serve`` drains on SIGTERM: a request in flight finishes with its answer,
new connections are refused at once, and the process exits 0 after the lifespan closed
the facade. A claim long-polling for a run answers 204 at once instead of holding the
stop for up to its ``wait_seconds``.

The request in flight is a real one: an artifact upload to the local-disk storage route
whose body is still arriving when the signal comes.
"""

from __future__ import annotations

import hashlib
import signal
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from integration_world import expect, workspace_admin
from live_server import client_for
from test_serve_restart import sign_up_and_in

from support.serve_process import STOP_TIMEOUT, free_port, start_serve, wait_until_up
from support.world import bearer

BODY = b"0123456789abcdef" * 65536  # 1 MiB


def upload_url(url: str) -> str:
    """A person's presigned upload URL for ``BODY``, set up over HTTP."""
    with client_for(url) as client:
        token = sign_up_and_in(client, "ada@example.com")
        workspace = expect(
            client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)), 201
        )
        switched = client.post(
            "/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=bearer(token)
        )
        headers = bearer(expect(switched, 201)["token"])
        backup = expect(
            client.post(
                f"/v1/workspaces/{workspace['id']}/backups",
                json={"name": "nightly", "kind": "manual"},
                headers=headers,
            ),
            201,
        )
        retention = {"retention": {"expire_after": "P30D", "lock_for": "P1D"}}
        expect(client.patch(f"/v1/backups/{backup['id']}", json=retention, headers=headers), 200)
        run = expect(
            client.post("/v1/runs", json={"backup_id": backup["id"]}, headers=headers), 201
        )
        plan = expect(
            client.post(
                f"/v1/runs/{run['id']}/upload-url",
                json={
                    "name": "db.dump",
                    "size": len(BODY),
                    "sha256": hashlib.sha256(BODY).hexdigest(),
                },
                headers=headers,
            ),
            201,
        )
    presigned: str = plan["url"]
    return presigned


def read_status(connection: socket.socket) -> int:
    """The status code of the response arriving on ``connection``."""
    head = b""
    while b"\r\n" not in head:
        chunk = connection.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed before a status line: {head!r}")
        head += chunk
    return int(head.split(b" ", 2)[1])


def test_sigterm_lets_the_request_in_flight_finish(tmp_path: Path) -> None:
    """Half an upload is sent, then SIGTERM: a new connection is refused, the second half
    is still accepted and answered 200, and the process exits 0 with the lifespan's
    shutdown logged after the request."""
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    process = start_serve(tmp_path / "data", port, log)
    try:
        wait_until_up(process, url, log)
        target = urlsplit(upload_url(url))
        path = f"{target.path}?{target.query}"
        half = len(BODY) // 2
        with socket.create_connection(("127.0.0.1", port), timeout=STOP_TIMEOUT) as upload:
            upload.sendall(
                f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Length: {len(BODY)}\r\n\r\n".encode()
                + BODY[:half]
            )
            time.sleep(0.3)  # the server has the request and is reading its body
            process.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
            assert process.poll() is None, "the server stopped with a request in flight"
            upload.sendall(BODY[half:])
            assert read_status(upload) == 200
        assert process.wait(STOP_TIMEOUT) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output_text = log.read_text()
    assert "Application shutdown complete." in output_text
    assert "Cancel" not in output_text  # nothing was cut off by the timeout


def test_sigterm_answers_a_waiting_claim_at_once(tmp_path: Path) -> None:
    """A worker's claim waits 30 s for a run, SIGTERM comes: the claim gets 204 within a
    moment and the process exits 0 well before the claim's wait (or the 30 s shutdown
    timeout) would have ended."""
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    process = start_serve(tmp_path / "data", port, log)
    answers: list[int] = []
    try:
        wait_until_up(process, url, log)
        with client_for(url) as client:
            _, token = workspace_admin(client, "ada@example.com")
            worker = expect(
                client.post("/v1/workers", json={"name": "host"}, headers=bearer(token)), 201
            )

        def claim() -> None:
            with client_for(url) as client:
                answer = client.post(
                    "/v1/claims",
                    json={"wait_seconds": 30},
                    headers=bearer(worker["token"]),
                    timeout=60,
                )
                answers.append(answer.status_code)

        waiting = threading.Thread(target=claim)
        waiting.start()
        time.sleep(1.0)  # the claim has looked once and waits
        assert answers == []
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_TIMEOUT) == 0, log.read_text()
        stopped = time.monotonic() - started
        waiting.join(10)
        assert answers == [204]
        assert stopped < 5, f"the stop took {stopped:.1f} s"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Cancel" not in log.read_text()  # the claim answered, nothing was cut off
