"""Load of ``fast_path.py``: wrk windows (closed loop), the rounds that interleave each
row with its peer, the open-loop client of ``_fixed_rate.py`` at half the maximum rate, and
the server's ``/metrics`` count of a window against wrk's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from _fast_setup import (
    PAGE_LIMIT,
    PEER_TOKEN,
    Deployment,
    Peers,
    Server,
    backend_pids,
    children_cpu_seconds,
    expect,
    process_cpu_seconds,
    request,
)
from _servers import HOST

FIXED_RATE = Path(__file__).resolve().parent / "_fixed_rate.py"


@dataclass(frozen=True)
class RowSpec:
    """A row of the table: a Strongroom request, its peer (the denominator), its target."""

    key: str
    title: str
    peer: str
    target: float


ROWS = (
    RowSpec("healthz", "GET /healthz", "peer-hello", 0.9),
    RowSpec("get", "GET /v1/backups/{id}", "peer-get", 0.75),
    RowSpec("list", "GET /v1/workspaces/{wid}/backups?limit=50", "peer-get", 0.5),
    RowSpec("create", "POST /v1/workspaces/{wid}/backups", "peer-get", 0.4),
)
PEER_TITLES = {
    "ceiling": "raw_hello:app GET / (ceiling)",
    "peer-hello": "peers:app GET /hello",
    "peer-get": "peers:app GET /backups/{id}",
}


# Load: wrk.

_WRK_LUA = """
wrk.method = %(method)s
wrk.headers["Authorization"] = %(authorization)s
%(post)s
function done(summary, latency, requests)
  io.write(string.format(
    'WRK-JSON {"requests":%%d,"duration_us":%%d,"non_2xx":%%d,"connect":%%d,' ..
    '"read":%%d,"write":%%d,"timeout":%%d,"p50_us":%%d,"p99_us":%%d}\\n',
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""
# POST: a new backup name per request (one wrk thread: the counter is unique).
_WRK_POST = """
wrk.headers["Content-Type"] = "application/json"
local prefix = %(prefix)s
local counter = 0
function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil,
    string.format('{"name":"%%s%%d","kind":"manual"}', prefix, counter))
end
"""


@dataclass(frozen=True)
class Target:
    """What one load window sends, to which server."""

    key: str
    server: Server
    method: str
    path: str
    token: str | None = None
    dbname: str | None = None  # the PostgreSQL database behind it, for its CPU


@dataclass
class Window:
    """The figures of one measured window."""

    key: str
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: int
    server_cpu: float | None = None
    db_cpu: float | None = None
    load_cpu: float | None = None


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII text is a Lua string literal


def wrk_script(target: Target, workdir: Path) -> Path:
    """The Lua script of one wrk run: method, Authorization, POST bodies, a JSON summary."""
    post = ""
    if target.method == "POST":
        post = _WRK_POST % {"prefix": lua_string(f"wrk-{uuid4().hex[:8]}-")}
    authorization = f"Bearer {target.token}" if target.token else ""
    script = workdir / f"wrk-{uuid4().hex[:8]}.lua"
    text = _WRK_LUA % {
        "method": lua_string(target.method),
        "authorization": lua_string(authorization) if target.token else "nil",
        "post": post,
    }
    script.write_text(text)
    return script


def run_wrk(target: Target, seconds: int, options: argparse.Namespace) -> tuple[str, float]:
    """One wrk run; its output and its wall time."""
    command = [
        options.wrk,
        "-t1",
        f"-c{options.connections}",
        f"-d{seconds}s",
        "--latency",
        "--timeout",
        "10s",
        "-s",
        str(wrk_script(target, options.workdir)),
        f"http://{HOST}:{target.server.port}{target.path}",
    ]
    began = time.monotonic()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"wrk failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout, time.monotonic() - began


def parse_wrk(key: str, output: str) -> Window:
    """The figures of a wrk run: its Lua summary, and wrk's own non-2xx line."""
    line = next((ln for ln in output.splitlines() if ln.startswith("WRK-JSON ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no summary:\n{output}")
    raw = json.loads(line.removeprefix("WRK-JSON "))
    non_2xx = 0
    for text in output.splitlines():
        if text.strip().startswith("Non-2xx or 3xx responses:"):
            non_2xx = int(text.split(":")[1])
    seconds = raw["duration_us"] / 1e6
    return Window(
        key=key,
        rps=raw["requests"] / seconds if seconds else 0.0,
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        requests=raw["requests"],
        non_2xx=max(non_2xx, raw["non_2xx"]),
        socket_errors=raw["connect"] + raw["read"] + raw["write"] + raw["timeout"],
    )


def measure(target: Target, options: argparse.Namespace, label: str) -> Window:
    """A warm-up run, then a measured run with the CPU of server, database and wrk."""
    run_wrk(target, options.warmup, options)
    pids = [] if target.dbname is None else backend_pids(options.postgres, target.dbname)
    server_before, db_before = target.server.cpu_seconds(), cpu_of(pids)
    wrk_before = children_cpu_seconds()
    output, elapsed = run_wrk(target, options.duration, options)
    window = parse_wrk(target.key, output)
    server_after = target.server.cpu_seconds()
    if server_before is not None and server_after is not None:
        window.server_cpu = (server_after - server_before) / elapsed
    window.db_cpu = (cpu_of(pids) - db_before) / elapsed if pids else None
    window.load_cpu = (children_cpu_seconds() - wrk_before) / elapsed
    print(
        f"  {label:<56}{window.rps:>9.1f}/s  p50 {window.p50_ms:>7.2f}  "
        f"p99 {window.p99_ms:>7.2f} ms  srv {percent(window.server_cpu):>4}  "
        f"db {percent(window.db_cpu):>4}  wrk {percent(window.load_cpu):>4}"
        + (f"  !! {window.non_2xx} non-2xx" if window.non_2xx else "")
        + (f"  !! {window.socket_errors} socket errors" if window.socket_errors else ""),
        flush=True,
    )
    if window.non_2xx or window.socket_errors:
        options.failures.append(
            f"{label}: {window.non_2xx} non-2xx responses, {window.socket_errors} socket errors"
        )
    return window


def cpu_of(pids: list[int]) -> float:
    return sum(process_cpu_seconds(pid) or 0.0 for pid in pids)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# The rows, interleaved with their peers.


def row_targets(deployment: Deployment) -> dict[str, Target]:
    """Each row's request to Strongroom."""
    server, token, db = deployment.server, deployment.token, deployment.dbname
    backups = f"/v1/workspaces/{deployment.workspace_id}/backups"
    return {
        "healthz": Target("healthz", server, "GET", "/healthz", None, db),
        "get": Target("get", server, "GET", f"/v1/backups/{deployment.backup_id}", token, db),
        "list": Target("list", server, "GET", f"{backups}?limit={PAGE_LIMIT}", token, db),
        "create": Target("create", server, "POST", backups, token, db),
    }


def peer_targets(peers: Peers) -> dict[str, Target]:
    """The peers' requests."""
    get = f"/backups/{peers.backup_id}"
    return {
        "ceiling": Target("ceiling", peers.ceiling, "GET", "/"),
        "peer-hello": Target("peer-hello", peers.peers, "GET", "/hello"),
        "peer-get": Target("peer-get", peers.peers, "GET", get, PEER_TOKEN, peers.dbname),
    }


def round_sequence() -> list[str]:
    """The windows of a round: the ceiling, then each row between two windows of its peer
    (shared between neighbouring rows of the same peer)."""
    sequence = ["ceiling"]
    for row in ROWS:
        if sequence[-1] != row.peer:
            sequence.append(row.peer)
        sequence += [row.key, row.peer]
    return sequence


@dataclass
class RowRound:
    """One row in one round: the server's window, the mean of its two peer windows."""

    server: Window
    peer_rps: float
    peer_p50_ms: float
    peer_p99_ms: float

    @property
    def ratio(self) -> float:
        return self.server.rps / self.peer_rps


def run_rounds(
    deployment: Deployment, peers: Peers, options: argparse.Namespace
) -> tuple[dict[str, list[RowRound]], list[Window]]:
    """``--rounds`` rounds of every row with its peers; the rows' figures and the ceiling's."""
    targets = {**peer_targets(peers), **row_targets(deployment)}
    sequence = round_sequence()
    rows: dict[str, list[RowRound]] = {row.key: [] for row in ROWS}
    ceilings: list[Window] = []
    for number in range(1, options.rounds + 1):
        print(f" round {number} of {options.rounds} ({deployment.label})", flush=True)
        windows = [
            measure(targets[key], options, title_of(key, deployment.label)) for key in sequence
        ]
        ceilings.append(windows[0])
        for index, window in enumerate(windows):
            if window.key in rows:
                before, after = windows[index - 1], windows[index + 1]
                rows[window.key].append(
                    RowRound(
                        window,
                        (before.rps + after.rps) / 2,
                        (before.p50_ms + after.p50_ms) / 2,
                        (before.p99_ms + after.p99_ms) / 2,
                    )
                )
    return rows, ceilings


def title_of(key: str, label: str) -> str:
    row = next((row for row in ROWS if row.key == key), None)
    return PEER_TITLES[key] if row is None else f"{row.title} [{label}]"


# Latency at half the maximum rate.


def fixed_rate(
    target: Target, rate: float, options: argparse.Namespace, label: str
) -> dict[str, Any]:
    """The open-loop client of ``_fixed_rate.py`` at ``rate`` against ``target``."""
    command = [sys.executable, str(FIXED_RATE), "--port", str(target.server.port)]
    command += ["--path", target.path, "--method", target.method, "--rate", f"{rate:.3f}"]
    command += ["--connections", str(options.connections), "--warmup", str(options.warmup)]
    command += ["--duration", str(options.fixed_duration)]
    if target.token:
        command += ["--token", target.token]
    timeout = options.warmup + options.fixed_duration + 90
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the fixed-rate client failed:\n{done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    non_2xx = sum(n for status, n in result["statuses"].items() if not status.startswith("2"))
    result["non_2xx"] = non_2xx
    print(
        f"  {label:<56}{rate:>9.1f}/s  p50 {result['p50_ms']:>7.2f}  "
        f"p99 {result['p99_ms']:>7.2f} ms  (max {result['max_ms']:.1f} ms, "
        f"late sends up to {result['worst_send_lag_ms']:.1f} ms, "
        f"client CPU {percent(result['client_cpu'])})",
        flush=True,
    )
    if non_2xx or result["errors"]:
        options.failures.append(
            f"{label} at a fixed rate: {non_2xx} non-2xx, {result['errors']} errors"
        )
    return result


def half_rate_latencies(
    deployment: Deployment, rows: dict[str, list[RowRound]], options: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    """GET, list and create at half their maximum (median closed-loop) rate."""
    targets = row_targets(deployment)
    results: dict[str, dict[str, Any]] = {}
    for key in ("get", "list", "create"):
        maximum = statistics.median(r.server.rps for r in rows[key])
        label = f"{title_of(key, deployment.label)}, fixed rate"
        results[key] = {"max_rps": maximum, **fixed_rate(targets[key], maximum / 2, options, label)}
    return results


# /metrics against wrk (issue 13): the server's own count of a window's requests.


def answered(port: int, route: str, method: str) -> int:
    """``strongroom_http_requests_total`` of one route template and method, every status."""
    status, body = request(port, "GET", "/metrics")
    expect(status, 200, "GET /metrics", body)
    prefix = "strongroom_http_requests_total{"
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(prefix) and f'route="{route}"' in line and f'method="{method}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def metrics_agree_with_wrk(deployment: Deployment, options: argparse.Namespace) -> dict[str, Any]:
    """One wrk window of ``GET /v1/backups/{id}`` between two scrapes of ``/metrics``: the
    scrapes' difference is the server's count of the window's requests, wrk's summary its
    own. The server may count more, never fewer: requests still in flight when wrk stops
    (at most one per connection) are answered after wrk stopped counting."""
    target = row_targets(deployment)["get"]
    route, port = "/v1/backups/{bid}", deployment.server.port
    before = answered(port, route, "GET")
    output, _ = run_wrk(target, options.duration, options)
    time.sleep(0.5)  # the requests in flight at the window's end are answered by now
    counted = answered(port, route, "GET") - before
    reported = parse_wrk(target.key, output).requests
    agree = 0 <= counted - reported <= options.connections
    print(
        f"  /metrics counted {counted} requests of GET {route}, wrk reported {reported} "
        f"(difference {counted - reported}, in flight at most {options.connections}): "
        + verdict(agree),
        flush=True,
    )
    if not agree:
        options.failures.append(f"/metrics counted {counted} requests, wrk reported {reported}")
    return {"metrics_counted": counted, "wrk_reported": reported, "agree": agree}
