"""The API's latency while the webhook sender works through 1 000 deliveries to a receiver
that never answers (contract 16: a dead receiver never slows the API).

    .venv/bin/python bench/webhooks.py                  # about 70 s
    .venv/bin/python bench/webhooks.py --events 1000 --rate 100 --duration 6 --rounds 2

One ``strongroom serve`` process (the SQLite default in a temporary data dir,
``STRONGROOM_ENDPOINT_NETWORKS=127.0.0.0/8`` so that a loopback receiver is allowed) and a
receiver on loopback that accepts every connection and never answers. Over HTTP a person
signs up, makes a workspace, a backup and a webhook to that receiver. Three windows of
``GET /v1/backups/{id}`` at a fixed rate (``bench/_fixed_rate.py``, open loop, latency from
the due time) alternate, ``--rounds`` times: **idle** (nothing to deliver) and **busy**
(a webhook to that receiver with ``--events`` pings queued, the sender's threads all
waiting on it; the webhook is deleted after the window, its deliveries with it, and the
attempts in flight are let end). A last idle window closes the run. It prints each
window's p50 and p99 and the ratio of the busy windows' median p99 to the idle windows'
(target: at most 1.10).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

import httpx2  # noqa: E402
from integration_world import expect, sign_up_and_in  # noqa: E402

from support.serve_process import free_port, start_serve, wait_until_up  # noqa: E402
from support.world import bearer  # noqa: E402

SETTLE = 9.0


class BlackHole:
    """A TCP server on loopback that accepts connections and never answers."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.port = self._server.getsockname()[1]
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            self._held.append(connection)

    @property
    def connections(self) -> int:
        return len(self._held)

    def close(self) -> None:
        self._server.close()
        for connection in self._held:
            connection.close()


def window(port: int, path: str, token: str, rate: float, duration: float) -> dict[str, Any]:
    """One fixed-rate window of GETs (``_fixed_rate.py`` in a process of its own)."""
    output = subprocess.run(
        [
            sys.executable,
            str(HERE / "_fixed_rate.py"),
            "--port",
            str(port),
            "--path",
            path,
            "--token",
            token,
            "--rate",
            str(rate),
            "--connections",
            "16",
            "--warmup",
            "1",
            "--duration",
            str(duration),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=duration + 60,
    ).stdout
    figures: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return figures


def run(arguments: argparse.Namespace) -> dict[str, Any]:
    hole = BlackHole()
    with tempfile.TemporaryDirectory() as folder:
        data_dir, log = Path(folder) / "data", Path(folder) / "serve.log"
        data_dir.mkdir()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        process = start_serve(
            data_dir,
            port,
            log,
            {
                "STRONGROOM_SIGNUP": "1",
                "STRONGROOM_EXECUTORS": "0",
                "STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8",
                "STRONGROOM_WEBHOOK_POLL": "0.2",
            },
        )
        try:
            wait_until_up(process, url, log)
            with httpx2.Client(base_url=url, trust_env=False, timeout=30) as client:
                token = sign_up_and_in(client, "ada@example.com")
                wid = expect(
                    client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)),
                    201,
                )["id"]
                scoped = expect(
                    client.post(
                        "/v1/auth/switch", json={"workspace_id": wid}, headers=bearer(token)
                    ),
                    201,
                )["token"]
                headers = bearer(scoped)
                backup = expect(
                    client.post(
                        f"/v1/workspaces/{wid}/backups",
                        json={"name": "Nightly", "kind": "manual"},
                        headers=headers,
                    ),
                    201,
                )["id"]
                path = f"/v1/backups/{backup}"
                args = (port, path, scoped, arguments.rate, arguments.duration)
                idle, busy, queueing, held = [], [], [], []
                for _ in range(arguments.rounds):
                    idle.append(window(*args))
                    hook = expect(
                        client.post(
                            f"/v1/workspaces/{wid}/webhooks",
                            json={
                                "url": f"http://127.0.0.1:{hole.port}/never",
                                "events": ["run.failed"],
                            },
                            headers=headers,
                        ),
                        201,
                    )["id"]
                    queued_at = time.perf_counter()
                    for _ in range(arguments.events):
                        expect(client.post(f"/v1/webhooks/{hook}/ping", headers=headers), 200)
                    queueing.append(time.perf_counter() - queued_at)
                    time.sleep(1.0)  # the sender takes its first batches
                    connected = hole.connections
                    busy.append(window(*args))
                    held.append(hole.connections - connected)
                    deleted = client.delete(f"/v1/webhooks/{hook}", headers=headers)
                    assert deleted.status_code == 204
                    # Attempts in flight end within the outbound budget's floor.
                    time.sleep(SETTLE)
                idle.append(window(*args))
        finally:
            process.terminate()
            process.wait(30)
            hole.close()
    idle_p99 = statistics.median(w["p99_ms"] for w in idle)
    busy_p99 = statistics.median(w["p99_ms"] for w in busy)
    return {
        "events_per_round": arguments.events,
        "rounds": arguments.rounds,
        "queueing_seconds": [round(q, 2) for q in queueing],
        "receiver_connections_opened_per_busy_window": held,
        "idle_windows": [_figures(w) for w in idle],
        "busy_windows": [_figures(w) for w in busy],
        "idle_p99_median_ms": round(idle_p99, 2),
        "busy_p99_median_ms": round(busy_p99, 2),
        "p99_busy_over_idle": round(busy_p99 / idle_p99, 3),
    }


def _figures(measured: dict[str, Any]) -> dict[str, Any]:
    return {
        "p50_ms": round(measured["p50_ms"], 2),
        "p99_ms": round(measured["p99_ms"], 2),
        "completed": measured["completed"],
        "errors": measured["errors"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    print(json.dumps(run(parser.parse_args()), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
