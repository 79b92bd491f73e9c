"""``GET /metrics`` of the service on PostgreSQL, over a real server: the pool's figures
(lent out, idle, waiting, maximum) come from psycopg_pool, and the scrape does not count
its own connection."""

from __future__ import annotations

from pathlib import Path

from integration_world import SECRET_KEY, postgres_url
from live_server import LiveServer

from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings


def _value(text: str, sample: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(f"{sample} ")]
    return float(line.rsplit(" ", 1)[1])


def test_the_pool_is_reported(integration_conninfo: str, tmp_path: Path) -> None:
    """After a few requests: nothing lent out or waiting between requests, a maximum of at
    least one connection, and the service-wide figures read (``statistics_up 1``)."""
    settings = Settings(
        database_url=postgres_url(integration_conninfo),
        data_dir=tmp_path,
        secret_key=SECRET_KEY,
        retention_interval=0,
        # No background work of its own that could borrow a connection at a scrape.
        health_interval=0,
        webhook_poll=0,
    )
    with LiveServer(create_app(settings)) as server, server.client() as client:
        for _ in range(3):
            assert client.get("/readyz").status_code == 200
        text = client.get("/metrics").text
    assert _value(text, "strongroom_statistics_up") == 1
    assert _value(text, 'strongroom_database_connections{state="in_use"}') == 0
    assert _value(text, 'strongroom_database_connections{state="idle"}') >= 1
    assert _value(text, "strongroom_database_connections_waiting") == 0
    assert _value(text, "strongroom_database_connections_max") >= 1
    assert _value(text, 'strongroom_runs{state="queued"}') >= 0
