"""Report of ``fast_path.py``: the table of rows against their targets, the latencies at
half the maximum rate, the round trips, the seeded comparisons, and what the figures were
measured on.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _fast_load import PEER_TITLES, ROWS, RowRound, RowSpec, percent, verdict

# Targets (issue 8).
GET_P99_MS = 10.0
CREATE_P99_MS = 25.0
GET_ROUND_TRIPS = 1
CREATE_ROUND_TRIPS = 2
CREATE_AT_EXISTING = 0.9
DEEP_PAGE_FACTOR = 1.2


# The report.


def row_summary(rounds: list[RowRound], row: RowSpec) -> dict[str, Any]:
    """Medians over the rounds of one row on one backend."""
    return {
        "title": row.title,
        "target": row.target,
        "rps": statistics.median(r.server.rps for r in rounds),
        "peer_rps": statistics.median(r.peer_rps for r in rounds),
        "ratio": statistics.median(r.ratio for r in rounds),
        "ratios": [r.ratio for r in rounds],
        "p50_ms": statistics.median(r.server.p50_ms for r in rounds),
        "p99_ms": statistics.median(r.server.p99_ms for r in rounds),
        "peer_p50_ms": statistics.median(r.peer_p50_ms for r in rounds),
        "peer_p99_ms": statistics.median(r.peer_p99_ms for r in rounds),
        "server_cpu": median_of(r.server.server_cpu for r in rounds),
        "windows": [dataclasses.asdict(r.server) for r in rounds],
    }


def median_of(values: Iterator[float | None] | Any) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def round_trip_verdict(key: str, mean: float) -> str:
    limit = {"get": GET_ROUND_TRIPS, "list": GET_ROUND_TRIPS, "create": CREATE_ROUND_TRIPS}
    return "" if key not in limit else f" (<= {limit[key]}: {verdict(mean <= limit[key])})"


def print_table(results: dict[str, Any]) -> None:
    """The rows: Strongroom's and the peer's requests/s, the ratio against its target,
    p50/p99 of both under the closed-loop load, round trips per request."""
    print("\n" + "=" * 150)
    print("medians over the rounds; p50/p99 under the closed-loop load (wrk -t1 -c64)")
    print(
        f"{'row':<44}{'backend':<9}{'Strongroom/s':>13}{'peer/s':>10}{'ratio':>8}"
        f"{'target':>8}{'':>6}{'p50/p99 ms':>16}{'peer p50/p99':>16}{'srv CPU':>9}"
        f"{'round trips':>13}"
    )
    for backend, data in results["backends"].items():
        trips = data.get("round_trips")
        for row in ROWS:
            s = data["rows"][row.key]
            print(
                f"{row.title:<44}{backend:<9}{s['rps']:>13.1f}{s['peer_rps']:>10.1f}"
                f"{s['ratio']:>8.3f}{'>= ' + str(row.target):>8}"
                f"{verdict(s['ratio'] >= row.target):>6}"
                f"{s['p50_ms']:>8.1f}/{s['p99_ms']:<7.1f}"
                f"{s['peer_p50_ms']:>8.1f}/{s['peer_p99_ms']:<7.1f}"
                f"{percent(s['server_cpu']):>9}{trips_cell(backend, trips, row.key):>13}"
            )
        ceiling = data["ceiling_rps"]
        print(f"{'  ' + PEER_TITLES['ceiling']:<44}{backend:<9}{ceiling:>13.1f}  (for scale)")


def trips_cell(backend: str, trips: dict[str, Any] | None, key: str) -> str:
    if trips is not None:
        return f"{trips[key]['mean']:.2f}"
    return "in-process" if backend == "sqlite" else "-"


def print_extras(results: dict[str, Any]) -> None:
    """Latency at half the maximum rate, round trips in detail, the seeded comparisons."""
    print_half_rate(results)
    print_round_trips(results)
    print_seeded(results)


def print_half_rate(results: dict[str, Any]) -> None:
    print("\nlatency at half the maximum rate (open loop, 64 connections, from the due time):")
    for backend, data in results["backends"].items():
        for key, fixed in data.get("half_rate", {}).items():
            limit = CREATE_P99_MS if key == "create" else GET_P99_MS
            title = next(row.title for row in ROWS if row.key == key)
            print(
                f"  {title:<44}{backend:<9}{fixed['rate']:>8.1f}/s  p50 {fixed['p50_ms']:>7.2f}"
                f"  p99 {fixed['p99_ms']:>7.2f} ms  (p99 <= {limit:g} ms: "
                f"{verdict(fixed['p99_ms'] <= limit)})"
            )


def print_round_trips(results: dict[str, Any]) -> None:
    trips = results["backends"].get("postgres", {}).get("round_trips")
    if trips:
        print("\ndatabase round trips per request (PostgreSQL, counted by a TCP proxy):")
        for row in ROWS:
            info = trips[row.key]
            print(
                f"  {row.title:<44}{info['mean']:>5.2f} over {info['requests']} requests"
                + round_trip_verdict(row.key, info["mean"])
            )
            for count, shape in info["shapes"]:
                print(f"      {count:>3} x {shape}")
    if "sqlite" in results["backends"]:
        print("  SQLite: in-process (no round trips)")


def print_seeded(results: dict[str, Any]) -> None:
    create = results.get("create_with_existing")
    if create:
        print(
            f"\ncreate throughput (PostgreSQL), workspace of {create['existing']:,} backups / "
            f"empty workspace: {create['full_rps']:.1f} / {create['empty_rps']:.1f} = "
            f"{create['ratio']:.3f}  (>= {CREATE_AT_EXISTING}: "
            f"{verdict(create['ratio'] >= CREATE_AT_EXISTING)}; rounds "
            f"{', '.join(f'{r:.3f}' for r in create['ratios'])})"
        )
    deep = results.get("deep_page")
    if deep:
        ok = max(deep["p50_factor"], deep["throughput_factor"]) <= DEEP_PAGE_FACTOR
        print(
            f"list page at cursor depth {deep['depth']:,} vs page 1 (PostgreSQL): p50 "
            f"{deep['deep_p50_ms']:.2f} / {deep['page_1_p50_ms']:.2f} ms = "
            f"{deep['p50_factor']:.3f}x; throughput {deep['page_1_rps']:.1f} / "
            f"{deep['deep_rps']:.1f} = {deep['throughput_factor']:.3f}x  "
            f"(<= {DEEP_PAGE_FACTOR}x: {verdict(ok)})"
        )


def load_text(load: tuple[float, ...]) -> str:
    return " ".join(f"{value:.2f}" for value in load)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = "?"
    memory = "?"
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        kib = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
        memory = f"{kib / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory": memory,
        "python": platform.python_version(),
        "system": platform.platform(),
        "load_average_before": os.getloadavg(),
    }


def wrk_version(wrk: str) -> str:
    done = subprocess.run([wrk, "-v"], capture_output=True, text=True, timeout=10, check=False)
    return (done.stdout or done.stderr).split(" [", 1)[0].strip()


def banner(host: dict[str, Any], options: argparse.Namespace) -> None:
    """What the run is made of, before any figure."""
    print(
        f"{host['cpus']} CPUs ({host['cpu_model']}), {host['memory']}, PostgreSQL "
        f"{host['postgres']}, Python {host['python']}, {host['wrk']}; load average "
        f"{load_text(host['load_average_before'])}"
    )
    print(
        f"wrk -t1 -c{options.connections}: {options.warmup} s warm-up + {options.duration} s "
        f"per window, {options.rounds} round(s); fixed rate {options.fixed_duration} s; "
        f"round trips over {options.count_requests} requests; backends "
        f"{', '.join(sorted(options.backends))}; peers from {options.peers}",
        flush=True,
    )
