"""The figures of ``scale.py`` at one size: HTTP latencies against the running server
(each the median of many sequential requests on one keep-alive connection, after a
warm-up), and one pass of the retention job and one scheduler tick, run in this process
through the service's own facade on the same database.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
from _fast_postgres import deep_cursor
from _fast_setup import request
from _scale_load import World
from _servers import HOST, cpu_seconds

from strongroom.entrypoints.service import open_facade
from strongroom.entrypoints.settings import Settings

PAGE = 50
EXPIRED = 20  # plain artifacts the retention pass finds expired
COLLECTED = 10  # runs of the keep-rules backup the pass collects
HTTP_FIGURES = ("list_first", "list_deep", "get", "create", "claim", "audit_first")
PASS_FIGURES = ("retention_pass", "scheduler_tick")
FIGURES = HTTP_FIGURES + PASS_FIGURES


class CpuMeter:
    """CPU seconds spent so far by the server process and by every PostgreSQL backend of
    the database (this meter's own excepted), and by this process when ``own``: a cost
    that the machine's other load changes far less than a latency."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.connection = psycopg.connect(world.url, autocommit=True)

    def __call__(self, own: bool = False) -> float:
        pids = [
            row[0]
            for row in self.connection.execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        ]
        spent = cpu_seconds(self.world.server_pid) + sum(cpu_seconds(pid) for pid in pids)
        return spent + (time.process_time() if own else 0.0)

    def close(self) -> None:
        self.connection.close()


def _timed(send: Callable[[], tuple[int, Any]], wanted: int, what: str) -> float:
    began = time.perf_counter()
    status, body = send()
    elapsed = time.perf_counter() - began
    if status != wanted:
        raise SystemExit(f"{what} answered {status}, not {wanted}: {body!r}")
    return elapsed * 1000


def _median_ms(
    meter: CpuMeter,
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    wanted: int,
    count: int,
    body: Callable[[], Any] | None = None,
) -> tuple[float, float]:
    """The median latency of ``count`` requests after a warm-up, and their CPU per
    request (server and database), in milliseconds."""
    world = meter.world

    def send() -> tuple[int, Any]:
        payload = None if body is None else body()
        return request(
            world.port, method, path, token=world.token, json_body=payload, connection=connection
        )

    for _ in range(max(5, count // 10)):
        _timed(send, wanted, f"{method} {path}")
    spent = meter()
    took = [_timed(send, wanted, f"{method} {path}") for _ in range(count)]
    return statistics.median(took), (meter() - spent) * 1000 / count


def _claims_ms(
    meter: CpuMeter, connection: http.client.HTTPConnection, count: int
) -> tuple[float, float]:
    """Trigger a run of the worker's backup, claim it (timed), fail it; ``count`` times
    after three to warm up. The median claim, and the CPU of a whole cycle."""
    world = meter.world
    took = []
    spent = 0.0
    for number in range(count + 3):
        if number == 3:
            spent = meter()
        status, body = request(
            world.port,
            "POST",
            f"/v1/backups/{world.claim_backup}/trigger",
            token=world.token,
            connection=connection,
        )
        if status not in (201, 202):
            raise SystemExit(f"trigger answered {status}: {body!r}")
        began = time.perf_counter()
        status, body = request(
            world.port,
            "POST",
            "/v1/claims",
            token=world.worker_token,
            json_body={"wait_seconds": 0},
            connection=connection,
        )
        elapsed = (time.perf_counter() - began) * 1000
        if status != 201:
            raise SystemExit(f"claim answered {status}: {body!r}")
        if number >= 3:
            took.append(elapsed)
        status, body = request(
            world.port,
            "POST",
            f"/v1/runs/{body['run']['id']}/fail",
            token=world.worker_token,
            json_body={"error": "scale bench"},
            connection=connection,
        )
        if status != 200:
            raise SystemExit(f"fail answered {status}: {body!r}")
    return statistics.median(took), (meter() - spent) * 1000 / count


def deep_targets(world: World, options: argparse.Namespace, size: int) -> tuple[str, UUID]:
    """The cursor after the item at half the workspace's depth, and a backup at that depth
    (what GET reads)."""
    dbname = world.url.rsplit("/", 1)[1]
    depth = max(1, size // 2)
    cursor = deep_cursor(options, dbname, world.workspace_id, depth)
    with psycopg.connect(world.url) as conn:
        row = conn.execute(
            "SELECT id FROM backups WHERE workspace_id = %s"
            " ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1",
            (world.workspace_id, depth),
        ).fetchone()
    assert row is not None
    return cursor, row[0]


Figures = dict[str, tuple[float, float]]  # figure: (latency ms, CPU ms)


def http_figures(
    world: World, options: argparse.Namespace, cursor: str, backup_id: UUID
) -> Figures:
    """Every HTTP figure once: median latency and CPU per request, in milliseconds."""
    count = options.requests
    meter = CpuMeter(world)
    connection = http.client.HTTPConnection(HOST, world.port, timeout=60)
    listing = f"/v1/workspaces/{world.workspace_id}/backups?limit={PAGE}"
    audit = f"/v1/workspaces/{world.workspace_id}/audit?limit={PAGE}"
    prefix = uuid4().hex[:8]
    made = iter(range(1_000_000))
    try:
        return {
            "list_first": _median_ms(meter, connection, "GET", listing, 200, count),
            "list_deep": _median_ms(
                meter, connection, "GET", f"{listing}&cursor={cursor}", 200, count
            ),
            "get": _median_ms(meter, connection, "GET", f"/v1/backups/{backup_id}", 200, count),
            "create": _median_ms(
                meter,
                connection,
                "POST",
                f"/v1/workspaces/{world.workspace_id}/backups",
                201,
                max(20, count // 2),
                body=lambda: {"name": f"made-{prefix}-{next(made)}", "kind": "manual"},
            ),
            "claim": _claims_ms(meter, connection, max(10, count // 6)),
            "audit_first": _median_ms(meter, connection, "GET", audit, 200, count),
        }
    finally:
        connection.close()
        meter.close()


# The jobs, in this process.


def _arm_retention(world: World) -> list[UUID]:
    """``EXPIRED`` plain artifacts of the big workspace past their expiry, and
    ``COLLECTED`` runs of the keep-rules backup old enough for its rules to give up (new
    clones of its run, each with its own artifact); the expired artifacts' ids."""
    with psycopg.connect(world.url, autocommit=True) as conn:
        expired = [
            row[0]
            for row in conn.execute(
                "UPDATE artifacts SET expires_at = now() - interval '1 hour' WHERE id IN ("
                " SELECT id FROM artifacts WHERE workspace_id = %s AND state = 'available'"
                " AND expires_at > now() AND backup_id <> %s"
                " ORDER BY created_at DESC, id DESC LIMIT %s) RETURNING id",
                (world.workspace_id, world.ruled_backup, EXPIRED),
            ).fetchall()
        ]
        conn.execute(
            """
            WITH made AS (
                INSERT INTO runs (id, workspace_id, backup_id, state, trigger, worker_id,
                    created_at, started_at, finished_at, artifact_count, bytes, error, attempt,
                    lease_expires_at, cancel_requested, progress)
                SELECT gen_random_uuid(), r.workspace_id, r.backup_id, r.state, r.trigger,
                    NULL, r.created_at - i * interval '1 day', r.started_at - i * interval '1 day',
                    r.finished_at - i * interval '1 day', r.artifact_count, r.bytes, NULL, 1,
                    NULL, false, NULL
                FROM runs AS r, generate_series(10, 9 + %(count)s::int) AS i WHERE r.id = %(run)s
                RETURNING id, workspace_id, backup_id, created_at
            )
            INSERT INTO artifacts (id, workspace_id, backup_id, run_id, name, size, sha256,
                state, storage, object_key, upload_id, created_at, expires_at, locked_until,
                verification, verified_at, held)
            SELECT gen_random_uuid(), made.workspace_id, made.backup_id, made.id, a.name,
                a.size, a.sha256, a.state, a.storage, a.object_key || '-' || made.id, NULL,
                made.created_at, made.created_at + interval '1 day', NULL, a.verification,
                a.verified_at, false
            FROM made, artifacts AS a WHERE a.run_id = %(run)s
            """,
            {"count": COLLECTED, "run": world.ruled_run},
        )
    return expired


def _disarm_retention(world: World, expired: list[UUID]) -> None:
    """The expired plain artifacts (each its backup's last, so kept) expire far ahead
    again: every pass finds the same number."""
    with psycopg.connect(world.url, autocommit=True) as conn:
        conn.execute(
            "UPDATE artifacts SET expires_at = created_at + interval '3650 days'"
            " WHERE id = ANY(%s) AND state = 'available'",
            (expired,),
        )


def _clear_scheduled(world: World) -> None:
    with psycopg.connect(world.url, autocommit=True) as conn:
        conn.execute(
            "DELETE FROM runs WHERE backup_id = ANY(%s) AND state = 'queued'", (world.scheduled,)
        )


async def _passes(world: World, settings: Settings, tick: int) -> tuple[Figures, dict[str, Any]]:
    meter = CpuMeter(world)
    try:
        async with open_facade(settings, migrate=False) as facade:
            await facade.scheduler.run_due(datetime.now(UTC) - timedelta(days=1))  # warm-up
            expired = _arm_retention(world)
            began, spent = time.perf_counter(), meter(own=True)
            report = await facade.retention.run()
            retention = (time.perf_counter() - began) * 1000, (meter(own=True) - spent) * 1000
            _disarm_retention(world, expired)
            _clear_scheduled(world)
            now = datetime.now(UTC) + timedelta(days=1 + tick)
            began, spent = time.perf_counter(), meter(own=True)
            scheduled = await facade.scheduler.run_due(now)
            ticked = (time.perf_counter() - began) * 1000, (meter(own=True) - spent) * 1000
    finally:
        meter.close()
    details = {"retention": repr(report), "scheduler": repr(scheduled)}
    return {"retention_pass": retention, "scheduler_tick": ticked}, details


def pass_figures(world: World, settings: Settings, tick: int) -> tuple[Figures, dict[str, Any]]:
    """One retention pass and one scheduler tick (wall and CPU milliseconds, this process
    and the database's), and what they did."""
    return asyncio.run(_passes(world, settings, tick))


def job_settings(world: World, secret_key: str, data_dir: Path) -> Settings:
    return Settings(database_url=world.url, secret_key=secret_key, data_dir=data_dir)
