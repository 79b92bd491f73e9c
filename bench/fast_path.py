"""Strongroom's fast paths as ratios of the shared peers, measured in one run (issue 8).

    .venv/bin/python bench/fast_path.py                # about 8 minutes on 2 cores
    .venv/bin/python bench/fast_path.py --quick        # about 2 minutes, smaller figures
    .venv/bin/python bench/fast_path.py --json out.json

It installs nothing but Debian's ``wrk`` (``apt-get install -y wrk`` when missing and root),
then, all on 127.0.0.1:

1. creates a peer database with the SQL of ``../shared/bench/README.md`` and starts the
   peers as they are (``uvicorn raw_hello:app`` and ``uvicorn peers:app``, uvloop,
   httptools, no access log);
2. starts ``strongroom serve`` on a scratch PostgreSQL database, then on the SQLite default
   (a temporary ``--data-dir``), as an operator would, sets it up over the HTTP API and
   lifts the workspace's backup quota with ``strongroom admin quota``;
3. loads each row with ``wrk -t1 -c64`` (warm-up, then a measured window), interleaving
   peer and server windows so that each server window sits between two peer windows, for
   ``--rounds`` rounds; then loads GETs and creates at half the maximum rate with the
   open-loop client of ``_fixed_rate.py``;
4. on PostgreSQL: counts database round trips per request through the TCP proxy of
   ``_round_trips.py``; compares creates in an empty workspace with creates in one of
   ``--existing`` backups, and a list page at cursor depth ``--depth`` with page 1 (rows
   seeded by SQL);
5. prints every figure with its target, writes them to ``--json``, and always stops every
   process it started and drops every database it created.

It exits 1 when any response was not 2xx or a connection failed; a missed target is
reported, never an error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Any
from uuid import uuid4

import psycopg
from _fast_load import (
    ROWS,
    half_rate_latencies,
    metrics_agree_with_wrk,
    row_targets,
    run_rounds,
    run_wrk,
)
from _fast_postgres import create_with_existing, deep_page, proxied_round_trips
from _fast_report import (
    banner,
    load_text,
    machine,
    print_extras,
    print_table,
    row_summary,
    wrk_version,
)
from _fast_setup import (
    PEER_SQL,
    Deployment,
    Peers,
    Phases,
    admin_connection,
    ensure_wrk,
    scratch_database,
    set_up,
    start_peers,
    start_strongroom,
)
from _servers import HOST, LOCAL_POSTGRES, database_url

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LOOPBACK = (HOST, "localhost", "::1")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    """Unwind (cleaning up) on the first SIGINT, SIGTERM or SIGHUP; ignore the next ones,
    so that a second Ctrl-C cannot cut the clean-up short."""
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    print(f"\nstopped by {signal.Signals(signum).name}: cleaning up", flush=True)
    raise SystemExit(128 + signum)


# The run.


def run_metrics_check(options: argparse.Namespace) -> int:
    """``--metrics-only``: Strongroom on the SQLite default, set up, one warm-up and the
    /metrics window; no peers, no PostgreSQL."""
    with ExitStack() as stack:
        options.workdir = Path(tempfile.mkdtemp(prefix="strongroom-metrics-check-"))
        stack.callback(shutil.rmtree, options.workdir, ignore_errors=True)
        data_dir = ["--data-dir", str(options.workdir / "sqlite")]
        deployment = start_strongroom(stack, "sqlite", options.workdir, {}, data_dir)
        set_up(deployment)
        run_wrk(row_targets(deployment)["get"], options.warmup, options)
        result = metrics_agree_with_wrk(deployment, options)
        deployment.server.stop()
    return 0 if result["agree"] else 1


def run_backend(
    deployment: Deployment, peers: Peers, options: argparse.Namespace, phases: Phases
) -> dict[str, Any]:
    """Set up, the rounds of every row, and the latencies at half the maximum rate."""
    with phases.phase(f"{deployment.label}: set-up over HTTP"):
        set_up(deployment)
    with phases.phase(f"{deployment.label}: rows, {options.rounds} rounds"):
        rows, ceilings = run_rounds(deployment, peers, options)
    with phases.phase(f"{deployment.label}: latency at half the maximum rate"):
        half = half_rate_latencies(deployment, rows, options)
    with phases.phase(f"{deployment.label}: /metrics against wrk"):
        metrics = metrics_agree_with_wrk(deployment, options)
    return {
        "rows": {row.key: row_summary(rows[row.key], row) for row in ROWS},
        "ceiling_rps": statistics.median(w.rps for w in ceilings),
        "half_rate": half,
        "metrics_check": metrics,
    }


def run_postgres(
    stack: ExitStack, peers: Peers, options: argparse.Namespace, phases: Phases
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Strongroom on a scratch PostgreSQL database: rows, round trips, seeded comparisons."""
    dbname = stack.enter_context(scratch_database(options.postgres, "pg"))
    url = database_url(options.postgres, dbname)
    workdir: Path = options.workdir
    extra_env = {"STRONGROOM_DATABASE_URL": url, "STRONGROOM_DATA_DIR": str(workdir / "pg")}
    extra_env["STRONGROOM_SECRET_KEY"] = uuid4().hex + uuid4().hex
    deployment = start_strongroom(stack, "postgres", workdir, extra_env, ["--database-url", url])
    deployment.dbname = dbname
    data = run_backend(deployment, peers, options, phases)
    with phases.phase("postgres: round trips through a proxy"):
        data["round_trips"] = proxied_round_trips(stack, deployment, extra_env, options)
    extras: dict[str, Any] = {}
    if options.existing:
        with phases.phase(f"postgres: creates with {options.existing:,} existing backups"):
            extras["create_with_existing"] = create_with_existing(deployment, options)
    if options.depth:
        with phases.phase(f"postgres: page at cursor depth {options.depth:,}"):
            extras["deep_page"] = deep_page(deployment, options)
    deployment.server.stop()
    return data, extras


def run_sqlite(
    stack: ExitStack, peers: Peers, options: argparse.Namespace, phases: Phases
) -> dict[str, Any]:
    """Strongroom on the SQLite default in a temporary data directory."""
    data_dir = options.workdir / "sqlite"
    deployment = start_strongroom(
        stack, "sqlite", options.workdir, {}, ["--data-dir", str(data_dir)]
    )
    data = run_backend(deployment, peers, options, phases)
    deployment.server.stop()
    return data


def run(options: argparse.Namespace) -> dict[str, Any]:
    """Everything, with every process and database cleaned up whatever happens."""
    phases = Phases()
    results: dict[str, Any] = {"machine": machine(), "backends": {}}
    results["machine"]["wrk"] = wrk_version(options.wrk)
    with admin_connection(options.postgres) as admin:
        row = admin.execute("SHOW server_version").fetchone()
    results["machine"]["postgres"] = "?" if row is None else str(row[0])
    banner(results["machine"], options)
    with ExitStack() as stack:
        options.workdir = Path(tempfile.mkdtemp(prefix="strongroom-fast-path-"))
        stack.callback(shutil.rmtree, options.workdir, ignore_errors=True)
        with phases.phase("peers: database and servers"):
            peer_db = stack.enter_context(scratch_database(options.postgres, "peers"))
            with admin_connection(options.postgres, peer_db) as conn:
                conn.execute(PEER_SQL)
            dsn = psycopg.conninfo.make_conninfo(options.postgres, dbname=peer_db)
            peers = start_peers(stack, options.peers, dsn, peer_db, options.workdir)
        if "postgres" in options.backends:
            data, extras = run_postgres(stack, peers, options, phases)
            results["backends"]["postgres"] = data
            results.update(extras)
        if "sqlite" in options.backends:
            results["backends"]["sqlite"] = run_sqlite(stack, peers, options, phases)
    results["machine"]["load_average_after"] = os.getloadavg()
    results["phases_s"] = phases.seconds
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Strongroom's fast paths as ratios of the shared peers (issue 8)."
    )
    add = parser.add_argument
    add("--rounds", type=int, default=3, help="interleaved rounds; medians reported (3)")
    add("--duration", type=int, default=4, help="measured seconds per wrk window (4)")
    add("--warmup", type=int, default=1, help="warm-up seconds before each window (1)")
    add("--connections", type=int, default=64, help="wrk -c and fixed-rate connections (64)")
    add("--fixed-duration", type=int, default=5, help="seconds of each fixed-rate run (5)")
    add("--count-requests", type=int, default=30, help="requests counted per row (30)")
    add("--count-warmup", type=int, default=10, help="uncounted requests per row first (10)")
    add("--existing", type=int, default=100_000, help="backups before creates (100000; 0: skip)")
    add("--depth", type=int, default=1_000_000, help="cursor depth of the deep page (0: skip)")
    add("--backends", default="postgres,sqlite", help="postgres,sqlite (both) or one")
    add("--peers", type=Path, default=ROOT.parent / "shared" / "bench", help="the peers' folder")
    add(
        "--postgres",
        default=os.environ.get("STRONGROOM_BENCH_POSTGRES", LOCAL_POSTGRES),
        help="superuser conninfo (default: local trust)",
    )
    add("--json", type=Path, default=None, help="also write every figure to this file")
    add(
        "--metrics-only",
        action="store_true",
        help="only check /metrics against wrk's count, on SQLite (seconds; no peers needed)",
    )
    add(
        "--quick",
        action="store_true",
        help="1 round, 2 s windows, depth 100000, fewer counted requests (about 2 minutes)",
    )
    return parser


def options_from(argv: list[str] | None) -> argparse.Namespace:
    options = _parser().parse_args(argv)
    if options.quick:
        options.rounds, options.duration, options.fixed_duration = 1, 2, 3
        options.count_requests, options.count_warmup = 10, 10
        options.depth = min(options.depth, 100_000)
    options.backends = {name.strip() for name in options.backends.split(",") if name.strip()}
    if not options.backends <= {"postgres", "sqlite"}:
        raise SystemExit("--backends takes postgres, sqlite or both")
    if not options.metrics_only and not (options.peers / "peers.py").is_file():
        raise SystemExit(f"no peers.py in {options.peers} (--peers DIR)")
    options.peers = options.peers.resolve()
    host = psycopg.conninfo.conninfo_to_dict(options.postgres).get("host")
    if host not in LOOPBACK:
        raise SystemExit(f"--postgres: host {host!r} is not loopback; the bench stays on {HOST}")
    options.failures = []
    return options


def main(argv: list[str] | None = None) -> int:
    options = options_from(argv)
    options.wrk = ensure_wrk()
    for signum in STOP_SIGNALS:  # also SIGINT: a shell may start us with it ignored
        signal.signal(signum, _stop_on_signal)
    if options.metrics_only:
        return run_metrics_check(options)
    began = time.monotonic()
    results = run(options)
    results["options"] = {
        key: value if isinstance(value, int | str | float) else str(value)
        for key, value in vars(options).items()
        if key not in ("failures", "workdir")
    }
    results["failures"] = options.failures
    print_table(results)
    print_extras(results)
    print("\nphases (s): " + ", ".join(f"{k} {v:.0f}" for k, v in results["phases_s"].items()))
    host = results["machine"]
    print(
        f"total {time.monotonic() - began:.0f} s; load average before "
        f"{load_text(host['load_average_before'])}, after {load_text(host['load_average_after'])}"
    )
    if options.json:
        options.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
        print(f"figures written to {options.json}")
    if options.failures:
        print("\nFAILED: requests that did not succeed:\n  " + "\n  ".join(options.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
