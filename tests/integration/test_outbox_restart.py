"""The webhook outbox survives a killed server (contract 16): ``strongroom serve`` records
an event (a ping) while its sender is off, is killed (SIGKILL) before any delivery, and
the next ``serve`` on the same database delivers it, signed, to a real receiver on
loopback; on SQLite and on PostgreSQL."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from integration_world import SECRET_KEY, expect, postgres_url, sign_up_and_in
from live_server import client_for
from standardwebhooks.webhooks import Webhook as Verifier

from support.postgres import PostgresServer, scratch_database
from support.receivers import receiver
from support.serve_process import free_port, serving, start_serve, wait_until_up
from support.world import bearer


@contextmanager
def database_for(kind: str, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The ``STRONGROOM_*`` variables naming the database of ``kind``."""
    if kind == "sqlite":
        yield {}
        return
    pg_server: PostgresServer = request.getfixturevalue("pg_server")
    with scratch_database(pg_server, "strongroom_outbox") as conninfo:
        yield {"STRONGROOM_DATABASE_URL": postgres_url(conninfo)}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_event_recorded_before_a_kill_is_delivered_after_the_restart(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    data_dir.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    base = {
        "STRONGROOM_SECRET_KEY": SECRET_KEY,
        "STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8",
        "STRONGROOM_EXECUTORS": "0",
        "STRONGROOM_SIGNUP": "true",
    }
    with database_for(kind, request) as database, receiver() as hook:
        silent = {**base, **database, "STRONGROOM_WEBHOOK_POLL": "0"}
        process = start_serve(data_dir, port, log, silent)
        try:
            wait_until_up(process, url, log)
            with client_for(url) as client:
                token = sign_up_and_in(client, "ada@example.com")
                workspace = expect(
                    client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)),
                    201,
                )
                wid = workspace["id"]
                scoped = expect(
                    client.post(
                        "/v1/auth/switch", json={"workspace_id": wid}, headers=bearer(token)
                    ),
                    201,
                )["token"]
                created = expect(
                    client.post(
                        f"/v1/workspaces/{wid}/webhooks",
                        json={"url": hook.url, "events": ["run.failed"]},
                        headers=bearer(scoped),
                    ),
                    201,
                )
                ping = expect(
                    client.post(f"/v1/webhooks/{created['id']}/ping", headers=bearer(scoped)),
                    200,
                )
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        assert hook.received == []

        sending = {**base, **database, "STRONGROOM_WEBHOOK_POLL": "0.2"}
        with serving(data_dir, port, log, sending), client_for(url) as client:
            [delivered] = hook.wait_for(1)
            deadline = time.monotonic() + 10
            while True:
                log_page = expect(
                    client.get(f"/v1/webhooks/{created['id']}/deliveries", headers=bearer(scoped)),
                    200,
                )
                if log_page["data"][0]["state"] != "pending" or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    body = Verifier(created["secret"]).verify(delivered.body, delivered.headers)
    assert body["type"] == "webhook.ping"
    assert delivered.headers["webhook-id"] == ping["id"]
    [entry] = log_page["data"]
    assert entry["id"] == ping["id"]
    assert entry["state"] == "succeeded"
    assert [a["status_code"] for a in entry["attempts"]] == [204]
