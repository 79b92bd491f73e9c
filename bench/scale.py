"""Every cost flat in the size of the data (issue 32, scope 1): one PostgreSQL database grown
through each size, the same figures measured at each, as ratios to the smallest size.

    .venv/bin/python bench/scale.py --requests 200           # 10^2, 10^4, 10^6 backups
    .venv/bin/python bench/scale.py --sizes 100,10000        # quick: 1-2 minutes
    .venv/bin/python bench/scale.py --repeat 3 --json out.json

All on 127.0.0.1: a scratch database (dropped at the end), ``strongroom serve`` on it (its
background jobs off, so that they do not run into the figures), and set-up over the HTTP
API (``_scale_load.py``). At each size (backups in the big workspace; each generated backup
has a run with an artifact and an audit event, so runs, artifacts and events grow with it;
beside it ``size // 100`` small workspaces of 10 backups, at least 10) it bulk-loads the
difference by SQL, runs ``VACUUM ANALYZE`` and a checkpoint, and measures ``--repeat``
times (``_scale_measure.py``):

- the median latency of ``--requests`` sequential requests on one keep-alive connection,
  and their CPU per request (server process and database backends, from /proc): the
  backup list's first page and a page behind a cursor at half the depth, GET of a backup
  at that depth, a create, a claim (trigger, claim timed, fail) and the audit log's first
  page;
- one pass of the retention job (20 expired plain artifacts, 10 runs of a keep-rules
  backup to collect) and one scheduler tick (10 scheduled backups due), each timed once
  (wall and CPU) in this process through the service's facade on the same database.

Each figure is the median over the repeats; its ratio is to the smallest size's. On a
shared machine the latency follows the other load; the CPU is the figure for growth. The target
(issue 32): every figure at the largest size within 1.2x of the smallest's. A missed target
is reported, never an error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Any
from uuid import uuid4

import httpx2
from _fast_postgres import QUIET_BACKGROUND
from _scale_load import World, check_bodies, grow_big, grow_small, set_up_workspace, settle
from _scale_measure import (
    FIGURES,
    Figures,
    deep_targets,
    http_figures,
    job_settings,
    pass_figures,
)
from _servers import (
    LOCAL_POSTGRES,
    Instance,
    admin_quota,
    new_workspace,
    scratch_database,
    server_environment,
    sign_in,
)

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    print(f"\nstopped by {signal.Signals(signum).name}: cleaning up", flush=True)
    raise SystemExit(128 + signum)


def _git_commit() -> str:
    """The checkout's commit (the server's code), or ``?``."""
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "?"
    return done.stdout.strip() or "?"


def measure_size(
    world: World, options: argparse.Namespace, size: int, tick: list[int], settings: Any
) -> dict[str, Any]:
    """Grow to ``size``, settle, and measure every figure ``--repeat`` times."""
    began = time.monotonic()
    added = grow_big(world, size)
    small = grow_small(world, max(10, size // 100))
    settle(world.url)
    check_bodies(world)
    loaded = time.monotonic() - began
    print(
        f"\n{size:,} backups: {added:,} generated (+ runs, artifacts, events), {small:,} small"
        f" workspaces added ({world.small_workspaces:,} in all), {loaded:.0f} s",
        flush=True,
    )
    cursor, backup_id = deep_targets(world, options, size)
    runs: list[Figures] = []
    details: list[dict[str, Any]] = []
    for number in range(options.repeat):
        figures = http_figures(world, options, cursor, backup_id)
        jobs, did = pass_figures(world, settings, tick[0])
        tick[0] += 1
        figures.update(jobs)
        runs.append(figures)
        details.append(did)
        print(
            f"  repeat {number + 1} (ms, latency/CPU): "
            + ", ".join(f"{k} {wall:.2f}/{cpu:.2f}" for k, (wall, cpu) in figures.items()),
            flush=True,
        )
    return {
        "size": size,
        "load_s": loaded,
        "median_ms": {key: statistics.median(run[key][0] for run in runs) for key in FIGURES},
        "cpu_ms": {key: statistics.median(run[key][1] for run in runs) for key in FIGURES},
        "runs_ms": runs,
        "jobs": details,
        "load_average": os.getloadavg(),
    }


def run(options: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": _git_commit(), "load_before": os.getloadavg()}
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="strongroom-scale-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        url = stack.enter_context(scratch_database("scale", options.postgres))
        secret = uuid4().hex + uuid4().hex
        data_dir = workdir / "data"
        env = server_environment(
            {
                "STRONGROOM_DATABASE_URL": url,
                "STRONGROOM_DATA_DIR": str(data_dir),
                "STRONGROOM_SECRET_KEY": secret,
                **QUIET_BACKGROUND,
            }
        )
        server = Instance(stack, "serve", env, workdir)
        server.wait_ready()
        with httpx2.Client(base_url=server.url, trust_env=False, timeout=30) as client:
            session = sign_in(client, f"scale-{uuid4().hex[:8]}@example.com")
            workspace_id, token = new_workspace(client, session, "Big")
            admin_quota(env, workspace_id, "backups_per_workspace", 0)
            world = set_up_workspace(client, url, server.port, workspace_id, token)
        world.server_pid = server.proc.pid
        settings = job_settings(world, secret, data_dir)
        tick = [0]
        results["sizes"] = [
            measure_size(world, options, size, tick, settings) for size in options.sizes
        ]
        if options.hold:
            print(f"holding {url} for {options.hold} s (EXPLAIN by hand)", flush=True)
            time.sleep(options.hold)
    results["load_after"] = os.getloadavg()
    return results


def ratios(results: dict[str, Any], measure: str) -> dict[str, list[float]]:
    """Each figure's median at each size over its median at the smallest."""
    sizes = results["sizes"]
    base = sizes[0][measure]
    return {key: [size[measure][key] / base[key] for size in sizes] for key in FIGURES}


def _table(results: dict[str, Any], measure: str, title: str) -> bool:
    sizes = results["sizes"]
    ratio_key = "ratios" if measure == "median_ms" else "cpu_ratios"
    print(f"\n{title} (ratio to {sizes[0]['size']:,} backups); target <= {TARGET}x\n")
    print(f"{'figure':<16}" + "".join(f"{s['size']:>22,}" for s in sizes))
    met = True
    for key in FIGURES:
        cells = [
            f"{size[measure][key]:>12.2f} ({ratio:5.2f}x)"
            for size, ratio in zip(sizes, results[ratio_key][key], strict=True)
        ]
        last = results[ratio_key][key][-1]
        met = met and last <= TARGET
        flag = "" if last <= TARGET else "  MISSED"
        print(f"{key:<16}" + "".join(f"{c:>22}" for c in cells) + flag)
    return met


def report(results: dict[str, Any]) -> bool:
    """The tables of medians and ratios; whether every figure met the target in both."""
    sizes = results["sizes"]
    met = _table(results, "median_ms", "median latency, ms")
    met = _table(results, "cpu_ms", "CPU per request or pass (server + database), ms") and met
    loads = ", ".join(f"{s['size']:,}: {s['load_average'][0]:.2f}" for s in sizes)
    print(f"\ncommit {results['commit']}; load average (1 min) after each size: {loads}")
    return met


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--sizes", default="100,10000,1000000", help="backups in the big workspace, ascending")
    add("--repeat", type=int, default=3, help="measurements at each size; medians (3)")
    add("--requests", type=int, default=100, help="requests per HTTP figure (100)")
    add("--hold", type=int, default=0, help="seconds to keep the database at the end (0)")
    add("--json", type=Path, default=None, help="also write every figure to this file")
    add(
        "--postgres",
        default=os.environ.get("STRONGROOM_BENCH_POSTGRES", LOCAL_POSTGRES),
        help="superuser conninfo (default: local trust)",
    )
    return parser


def options_from(argv: list[str] | None) -> argparse.Namespace:
    options = _parser().parse_args(argv)
    options.sizes = [int(size) for size in options.sizes.split(",") if size.strip()]
    if options.sizes != sorted(options.sizes) or options.sizes[0] < 100:
        raise SystemExit("--sizes: ascending, each at least 100")
    return options


def main(argv: list[str] | None = None) -> int:
    options = options_from(argv)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_on_signal)
    began = time.monotonic()
    results = run(options)
    results["options"] = {"sizes": options.sizes, "repeat": options.repeat}
    results["ratios"] = ratios(results, "median_ms")
    results["cpu_ratios"] = ratios(results, "cpu_ms")
    results["met"] = report(results)
    print(f"total {time.monotonic() - began:.0f} s")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
        print(f"figures written to {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
