"""The scheduler's and the long poll's costs (issue 9), as ratios measured in one run.

    .venv/bin/python bench/scheduler.py                 # a few minutes on 2 cores
    .venv/bin/python bench/scheduler.py --large 100000  # quicker, smaller second size
    .venv/bin/python bench/scheduler.py --json out.json

1. **Due backups among many.** Two scratch PostgreSQL databases (created here, dropped at
   the end), each with one workspace whose scheduled backups are cloned by
   ``generate_series`` from one made through the use cases: ``--small`` (10 000) in one,
   ``--large`` (1 000 000) in the other, ``--due`` (100) due in both. In alternation, so
   that the machine's load falls on both alike, the scheduler's look-up
   (``backups.due`` through the real repository) and a whole scheduler pass (queue the
   100 runs, then put them back) are timed on each. Printed: medians, the ratios
   large/small (target <= 1.5x) and ``EXPLAIN ANALYZE`` of the look-up at the large size,
   which must show the ``backups_due`` index.
2. **Claim latency.** ``strongroom serve`` processes on PostgreSQL (two: the claim waits
   on A, the trigger goes to B, so the wake-up crosses processes by LISTEN/NOTIFY) and on
   the SQLite default (one process). A worker long-polls ``POST /v1/claims``
   (``wait_seconds`` 10); once it waits, ``POST /v1/backups/{bid}/trigger`` is sent; the
   figure is the time from the trigger's 202 to the claim's 201 (target < 50 ms), over
   ``--rounds`` rounds: median, p90 and max. Without wake-ups it would be the re-check's
   (uniform over 0-1000 ms).

Everything runs on 127.0.0.1; every process started is stopped and every database
created is dropped, also on errors and Ctrl-C. A missed target is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

from strongroom.adapters.identity.builtin import CLIENT_ID, BuiltinIdentityProvider
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import BackupChanges, BackupKind, RetentionPolicy, Schedule
from strongroom.domain.durations import Duration
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.entrypoints.service import open_facade
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom

HOST = "127.0.0.1"
LOCAL_POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
SECRET_KEY = "bench-scheduler-secret-key-0123456789abcdef"
PASSWORD = "correct horse battery staple"
STRONGROOM = Path(sys.executable).with_name("strongroom")
READY_TIMEOUT = 60.0
EVERY_MINUTE = Schedule("* * * * *", "UTC")
RETENTION = RetentionPolicy(Duration.parse("P30D"), Duration.parse("PT0S"))
DUE_TARGET = 1.5
LATENCY_TARGET_MS = 50.0


# ------------------------------------------------------------------------------------------
# Set-up through the use cases


async def tenant(facade: Strongroom) -> tuple[str, str, UUID, UUID]:
    """A person's workspace with a worker and one scheduled local backup: the admin's
    session token, the worker's token, the workspace id and the backup id."""
    identity = facade.deps.identity
    assert isinstance(identity, BuiltinIdentityProvider)
    email = f"bench-{uuid4().hex[:8]}@example.com"
    await identity.add_account(email, PASSWORD, "Bench")
    grant = await identity.start_device_authorization(CLIENT_ID, "http://bench")
    await identity.decide(grant.user_code, email, PASSWORD, approve=True)
    access = await identity.exchange_device_code(grant.device_code, CLIENT_ID)
    person = await facade.access.authenticate(
        (await facade.sessions.sign_in(access.access_token)).token
    )
    workspace = await facade.workspaces.create(person, "Bench")
    switched = await facade.sessions.switch(person, workspace.id)
    admin = await facade.access.authenticate(switched.token)
    await facade.workspaces.set_quota(workspace.id, QuotaResource.BACKUPS_PER_WORKSPACE, 0)
    worker = await facade.workers.create(admin, "rack")
    created = await facade.backups.create(admin, workspace.id, "template", BackupKind.LOCAL)
    changes = BackupChanges(worker_id=worker.worker.id, retention=RETENTION, schedule=EVERY_MINUTE)
    await facade.backups.update(admin, created.id, changes)
    assert worker.token is not None
    return switched.token, worker.token, workspace.id, created.id


@contextmanager
def scratch_database(admin_conninfo: str) -> Iterator[str]:
    """A new database for the block (dropped after, whatever happens); its conninfo."""
    name = f"strongroom_bench_sched_{os.getpid()}_{uuid4().hex[:6]}"
    with psycopg.connect(admin_conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield psycopg.conninfo.make_conninfo(admin_conninfo, dbname=name)
    finally:
        with psycopg.connect(admin_conninfo, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def postgres_url(conninfo: str) -> str:
    """The URL form ``STRONGROOM_DATABASE_URL`` takes."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    user = params.get("user") or "postgres"
    host, port = params.get("host") or HOST, params.get("port") or 5432
    return f"postgresql://{user}@{host}:{port}/{params['dbname']}"


# ------------------------------------------------------------------------------------------
# 1. Due backups among many


def grow(conninfo: str, template: UUID, start: int, stop: int, base: datetime) -> None:
    """Clone the template backup into numbers ``start..stop-1`` (next slots spread over
    the day after ``base``), in chunks, then ANALYZE."""
    chunk = 200_000
    with psycopg.connect(conninfo, autocommit=True) as connection:
        for low in range(start, stop, chunk):
            high = min(stop, low + chunk) - 1
            connection.execute(
                """
                INSERT INTO backups (
                    id, workspace_id, name, name_key, kind, state, paused, source,
                    sealed_credentials, schedule_cron, schedule_timezone, worker_id,
                    retention_expire_after_seconds, retention_lock_for_seconds, destination,
                    sealed_destination_credentials, next_run_at, created_at, updated_at)
                SELECT gen_random_uuid(), t.workspace_id, 'seed-' || i, 'seed-' || i, t.kind,
                       t.state, t.paused, t.source, t.sealed_credentials, t.schedule_cron,
                       t.schedule_timezone, t.worker_id, t.retention_expire_after_seconds,
                       t.retention_lock_for_seconds, t.destination,
                       t.sealed_destination_credentials,
                       %(base)s + make_interval(mins => CAST(1 + i %% 1440 AS integer)),
                       t.created_at, t.updated_at
                FROM backups AS t,
                     generate_series(CAST(%(low)s AS bigint), CAST(%(high)s AS bigint)) AS i
                WHERE t.id = %(template)s
                """,
                {"base": base, "low": low, "high": high, "template": template},
            )
        connection.execute("VACUUM ANALYZE backups")


def make_due(conninfo: str, count: int, now: datetime) -> None:
    """Exactly ``count`` backups due at ``now`` (the first seeds), no open runs."""
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute("DELETE FROM runs")
        connection.execute(
            "UPDATE backups SET next_run_at = %(due)s WHERE name_key = ANY(%(names)s)",
            {"due": now - timedelta(minutes=1), "names": [f"seed-{i}" for i in range(count)]},
        )
        connection.execute(
            "UPDATE backups SET next_run_at = %(later)s WHERE name_key = 'template'",
            {"later": now + timedelta(hours=1)},
        )


async def time_due(database: PostgresDatabase, now: datetime, due: int, repeats: int) -> float:
    """The median seconds of ``backups.due`` finding the ``due`` backups."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        async with database.uow() as uow:
            found = await uow.backups.due(now, 500)
        times.append(time.perf_counter() - began)
        assert len(found) == due, len(found)
    return statistics.median(times)


async def time_pass(
    facade: Strongroom, conninfo: str, now: datetime, due: int, repeats: int
) -> float:
    """The median seconds of a scheduler pass queueing the ``due`` runs."""
    times = []
    for _ in range(repeats):
        make_due(conninfo, due, now)
        began = time.perf_counter()
        report = await facade.scheduler.run_due(now)
        times.append(time.perf_counter() - began)
        assert report.scheduled == due, report
    return statistics.median(times)


def explain(conninfo: str, now: datetime) -> str:
    """EXPLAIN ANALYZE of the scheduler's look-up (the repository's query)."""
    from strongroom.adapters.sql.catalog import Dialect, Q, queries_for  # noqa: PLC0415

    text = queries_for(Dialect.POSTGRES).text(Q.BACKUP_DUE)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        rows = connection.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + text, {"now": now, "limit": 500}
        ).fetchall()
    return "\n".join(row[0] for row in rows)


@contextlib.asynccontextmanager
async def seeded(
    admin_conninfo: str, size: int, due: int, now: datetime
) -> AsyncIterator[tuple[str, PostgresDatabase, Strongroom]]:
    """A scratch database of ``size`` scheduled backups, ``due`` of them due at ``now``:
    its conninfo, an open database and a facade on it."""
    with scratch_database(admin_conninfo) as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as migrating:
            migrating.migrate()
        settings = Settings(
            database_url=postgres_url(conninfo),
            secret_key=SECRET_KEY,
            data_dir=Path(tempfile.mkdtemp(prefix="strongroom-bench-")),
        )
        async with open_facade(settings) as facade:
            _, _, _, template = await tenant(facade)
        began = time.monotonic()
        grow(conninfo, template, 0, size, now)
        print(f"  {size:>9} backups seeded in {time.monotonic() - began:.0f} s", flush=True)
        make_due(conninfo, due, now)
        database = PostgresDatabase.from_url(conninfo, min_size=1)
        await database.open()
        try:
            yield conninfo, database, bootstrap(uow=database.uow, secret_key=SECRET_KEY)
        finally:
            await database.aclose()


async def due_figures(
    admin_conninfo: str, small: int, large: int, due: int, repeats: int, rounds: int = 5
) -> dict[str, Any]:
    """Part 1: the look-up and a pass on a small and a large database, measured in
    alternation (``rounds`` rounds, so that the machine's load falls on both alike),
    their ratios and the plan at the large size."""
    figures: dict[str, Any] = {}
    now = datetime.now(UTC).replace(microsecond=0)
    samples: dict[str, list[float]] = {}
    async with (
        seeded(admin_conninfo, small, due, now) as (small_info, small_db, small_facade),
        seeded(admin_conninfo, large, due, now) as (large_info, large_db, large_facade),
    ):
        sides = {
            "small": (small_info, small_db, small_facade),
            "large": (large_info, large_db, large_facade),
        }
        for _ in range(rounds):
            for label, (conninfo, database, facade) in sides.items():
                make_due(conninfo, due, now)
                lookup = await time_due(database, now, due, max(1, repeats // rounds))
                samples.setdefault(f"due_lookup_{label}_ms", []).append(1000 * lookup)
                one_pass = await time_pass(facade, conninfo, now, due, 1)
                samples.setdefault(f"scheduler_pass_{label}_ms", []).append(1000 * one_pass)
        make_due(large_info, due, now)
        with psycopg.connect(large_info, autocommit=True) as connection:
            connection.execute("VACUUM ANALYZE backups")
        figures["explain_large"] = explain(large_info, now)
    for name, values in samples.items():
        figures[name] = statistics.median(values)
    for label, size in (("small", small), ("large", large)):
        print(
            f"  {size:>9} backups, {due} due: look-up "
            f"{figures[f'due_lookup_{label}_ms']:.2f} ms, pass "
            f"{figures[f'scheduler_pass_{label}_ms']:.0f} ms (medians)",
            flush=True,
        )
    figures["due_lookup_ratio"] = figures["due_lookup_large_ms"] / figures["due_lookup_small_ms"]
    figures["scheduler_pass_ratio"] = (
        figures["scheduler_pass_large_ms"] / figures["scheduler_pass_small_ms"]
    )
    return figures


# ------------------------------------------------------------------------------------------
# 2. Claim latency


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serve(data_dir: Path, environment: dict[str, str]) -> Iterator[int]:
    """``strongroom serve`` on a free port until the block ends; its port."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir / "serve.log").open("ab")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
    env |= environment | {"STRONGROOM_SCHEDULER_INTERVAL": "0"}
    process = subprocess.Popen(
        [str(STRONGROOM), "serve", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                raise SystemExit(f"strongroom serve exited; see {data_dir / 'serve.log'}")
            if time.monotonic() > deadline:
                raise SystemExit("strongroom serve did not start")
            with contextlib.suppress(OSError):
                if request(port, "GET", "/healthz")[0] == 200:
                    break
            time.sleep(0.1)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def request(
    port: int, method: str, path: str, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    """One request on a connection of its own: status and JSON body (or None)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else None)
    finally:
        connection.close()


def latencies(
    claim_port: int, trigger_port: int, admin: str, worker: str, backup: UUID, rounds: int
) -> list[float]:
    """Milliseconds from each trigger's 202 to the waiting claim's 201."""
    found = []
    for _ in range(rounds):
        answered: dict[str, Any] = {}
        poller = threading.Thread(target=_long_poll, args=(claim_port, worker, answered))
        poller.start()
        time.sleep(0.4)  # the claim is waiting
        status, run = request(trigger_port, "POST", f"/v1/backups/{backup}/trigger", admin)
        triggered_at = time.perf_counter()
        assert status == 202, (status, run)
        poller.join(15)
        status, body = answered["answer"]
        assert status == 201, (status, body)
        assert body["run"]["id"] == run["id"], body
        found.append(1000 * (answered["at"] - triggered_at))
        failed = request(
            claim_port, "POST", f"/v1/runs/{run['id']}/fail", worker, {"error": "bench"}
        )
        assert failed[0] == 200, failed
    return found


def _long_poll(port: int, worker: str, answered: dict[str, Any]) -> None:
    """A claim waiting up to 10 s; when and what it was answered."""
    answer = request(port, "POST", "/v1/claims", worker, {"wait_seconds": 10})
    answered["at"] = time.perf_counter()
    answered["answer"] = answer


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered),
        "p90_ms": ordered[max(0, round(0.9 * len(ordered)) - 1)],
        "max_ms": ordered[-1],
    }


def latency_figures(admin_conninfo: str, rounds: int) -> dict[str, Any]:
    """Part 2: on PostgreSQL (across two processes) and on SQLite (one process)."""
    figures: dict[str, Any] = {}
    with ExitStack() as stack:
        conninfo = stack.enter_context(scratch_database(admin_conninfo))
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="strongroom-bench-")))
        with PostgresDatabase.from_url(conninfo, min_size=0) as migrating:
            migrating.migrate()
        environment = {
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
        }
        settings = Settings(
            database_url=environment["STRONGROOM_DATABASE_URL"],
            secret_key=SECRET_KEY,
            data_dir=root / "setup",
        )
        admin, worker, _, backup = asyncio.run(_tenant_of(settings))
        with serve(root / "a", environment) as port_a, serve(root / "b", environment) as port_b:
            figures["postgres"] = summary(latencies(port_a, port_b, admin, worker, backup, rounds))
        sqlite_dir = root / "sqlite"
        settings = Settings(data_dir=sqlite_dir, secret_key=SECRET_KEY)
        admin, worker, _, backup = asyncio.run(_tenant_of(settings))
        with serve(sqlite_dir, {"STRONGROOM_SECRET_KEY": SECRET_KEY}) as port:
            figures["sqlite"] = summary(latencies(port, port, admin, worker, backup, rounds))
    return figures


async def _tenant_of(settings: Settings) -> tuple[str, str, UUID, UUID]:
    async with open_facade(settings) as facade:
        return await tenant(facade)


# ------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgres", default=os.environ.get("STRONGROOM_BENCH_POSTGRES", LOCAL_POSTGRES)
    )
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    arguments = parser.parse_args()

    print("1. due backups among many (PostgreSQL)", flush=True)
    figures = asyncio.run(
        due_figures(
            arguments.postgres, arguments.small, arguments.large, arguments.due, arguments.repeats
        )
    )
    for name, label in (("due_lookup_ratio", "look-up"), ("scheduler_pass_ratio", "pass")):
        ratio = figures[name]
        met = "met" if ratio <= DUE_TARGET else "MISSED"
        print(
            f"  {label} ratio {arguments.large}/{arguments.small} backups: {ratio:.2f}x "
            f"(target <= {DUE_TARGET}x) {met}"
        )
    print("  EXPLAIN ANALYZE at the large size:")
    print("    " + figures["explain_large"].replace("\n", "\n    "))

    print("2. claim latency: trigger's 202 to the waiting claim's 201", flush=True)
    latency = latency_figures(arguments.postgres, arguments.rounds)
    for name, values in latency.items():
        met = "met" if values["median_ms"] < LATENCY_TARGET_MS else "MISSED"
        print(
            f"  {name:<9} median {values['median_ms']:.1f} ms, p90 {values['p90_ms']:.1f} ms, "
            f"max {values['max_ms']:.1f} ms (target < {LATENCY_TARGET_MS:.0f} ms) {met}"
        )
    figures["claim_latency"] = latency
    if arguments.json:
        arguments.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
