"""A serving process's PostgreSQL pool is opened whole: its connections are ready before
the first burst of requests, so none of them waits for a connection to be made."""

from __future__ import annotations

import time
from pathlib import Path

from integration_world import SECRET_KEY, postgres_url
from live_server import LiveServer

from strongroom.adapters.sql.postgres import default_max_size
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings


def _value(text: str, sample: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(f"{sample} ")]
    return float(line.rsplit(" ", 1)[1])


def test_the_serving_pool_holds_all_its_connections(
    integration_conninfo: str, tmp_path: Path
) -> None:
    """Without a single request needing the database, the pool fills up to its maximum
    (``default_max_size``) and keeps every connection idle and ready."""
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
        # /metrics' database figures may be 15 s old (contract 13): wait past that.
        deadline = time.monotonic() + 40
        while True:
            text = client.get("/metrics").text
            idle = _value(text, 'strongroom_database_connections{state="idle"}')
            if idle == default_max_size() or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert _value(text, "strongroom_database_connections_max") == default_max_size()
    assert idle == default_max_size()
