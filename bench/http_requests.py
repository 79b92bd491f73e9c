"""Requests per second of Strongroom's hot paths on PostgreSQL, as ratios of a raw ASGI
hello served the same way, and database round trips per request.

    /work/venv/bin/python bench/http_requests.py [--duration 5] [--rounds 1] [...]

In one run it:

1. creates a scratch database on the PostgreSQL server (default 127.0.0.1:5432, user
   ``postgres``; ``--postgres`` or ``STRONGROOM_BENCH_POSTGRES`` name another), dropped at
   the end whatever happens; no other database is touched;
2. runs ``strongroom serve`` on it (uvicorn, uvloop, httptools, access log off, one worker;
   it applies the migrations) and, on another loopback port, a raw ASGI hello under the
   same uvicorn settings;
3. over the HTTP API: signs a person up, signs in with the device flow, starts a session,
   creates a workspace, switches to a session scoped to it and creates a backup; the
   workspace's ``backups_per_workspace`` quota is set to 0 (unlimited) by the operator
   use case, so that every POST of the load creates a new backup;
4. drives each scenario (hello, ``GET /v1/backups/{id}``, ``POST
   /v1/workspaces/{wid}/backups``) for a warm-up and then a measured window, with ``wrk``
   when it is on PATH, otherwise with the Python load generator of ``_support.py`` in a
   process of its own;
5. runs a second, bench-only server process on the same database whose psycopg
   ``Cursor.execute`` records every statement, sends ``--count-requests`` GETs and POSTs
   one after the other, and reports the statements (database round trips) of each.

It prints requests/s of each scenario, the ratios GET/hello and POST/hello, and round trips
per request with the statements behind them. Targets (issue 3): GET at least 0.15 of the
hello; at most 1 round trip for an authenticated GET and 2 for a create.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
SUPPORT = HERE / "_support.py"
HOST = "127.0.0.1"
LOCAL_POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
EMAIL = "bench@example.com"
PASSWORD = "correct horse battery staple"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
CLIENT_ID = "strongroom-cli"
ROUND_TRIPS_PATH = "/__bench/round-trips"
WINDOW_START = "window-start"  # printed by the Python load generator (_support.py)
WINDOW_END = "window-end"
READY_TIMEOUT = 60.0
TARGET_GET_RATIO = 0.15
TARGET_GET_ROUND_TRIPS = 1
TARGET_CREATE_ROUND_TRIPS = 2
WRK_HINT = "wrk is not installed: `apt-get install wrk` gives better figures"


# PostgreSQL: a scratch database of our own.


def _admin(conninfo: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=5)


@contextmanager
def scratch_database(admin_conninfo: str) -> Iterator[tuple[str, str]]:
    """A new database for the block, dropped afterwards; its name and its URL."""
    name = f"strongroom_bench_{os.getpid()}_{uuid4().hex[:8]}"
    with _admin(admin_conninfo) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name, _database_url(admin_conninfo, name)
    finally:
        with _admin(admin_conninfo) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _database_url(admin_conninfo: str, dbname: str) -> str:
    """``postgresql://`` URL of ``dbname`` on the admin connection's server (Strongroom's
    ``STRONGROOM_DATABASE_URL`` takes URLs only)."""
    parts = psycopg.conninfo.conninfo_to_dict(admin_conninfo)
    user = urllib.parse.quote(str(parts.get("user", "postgres")), safe="")
    password = parts.get("password")
    credentials = user if password is None else f"{user}:{urllib.parse.quote(str(password))}"
    host = str(parts.get("host", HOST))
    port = str(parts.get("port", 5432))
    return f"postgresql://{credentials}@{host}:{port}/{dbname}"


def _server_version(admin_conninfo: str) -> str:
    with _admin(admin_conninfo) as admin:
        row = admin.execute("SHOW server_version").fetchone()
    return "?" if row is None else str(row[0]).split()[0]


def _backend_pids(admin_conninfo: str, dbname: str) -> list[int]:
    with _admin(admin_conninfo) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (dbname,)
        ).fetchall()
    return [int(pid) for (pid,) in rows]


# Processes.


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """A server process of the benchmark, its output kept in a log file."""

    def __init__(self, name: str, command: list[str], env: Mapping[str, str], log: Path):
        self.name = name
        self.port = free_port()
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)],
                env=dict(env),
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, path: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.name} exited early:\n{self.log_tail()}")
            try:
                status, _ = request(self.port, "GET", path)
            except OSError:
                status = 0
            if status == 200:
                return
            time.sleep(0.2)
        raise SystemExit(f"{self.name} not ready after {READY_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def cpu_seconds(self) -> float | None:
        return process_cpu_seconds(self.process.pid)

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (all its threads), from /proc; None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """CPU time of this process's waited-for children (wrk, once it has ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pids: list[int]) -> float:
    return sum(process_cpu_seconds(pid) or 0.0 for pid in pids)


def child_environment(database_url: str, data_dir: Path) -> dict[str, str]:
    """The environment of the server processes: this one's without any ``STRONGROOM_*``,
    plus the benchmark's configuration."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STRONGROOM_")}
    env.update(
        {
            "STRONGROOM_DATABASE_URL": database_url,
            "STRONGROOM_DATA_DIR": str(data_dir),
            "STRONGROOM_SECRET_KEY": uuid4().hex + uuid4().hex,
            "STRONGROOM_SIGNUP": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


# HTTP, for set-up and counting (one request at a time).


def request(
    port: int,
    method: str,
    path: str,
    *,
    token: str | None = None,
    json_body: Any = None,
    form: Mapping[str, str] | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> tuple[int, Any]:
    """One request; the status and the body (parsed when JSON)."""
    headers = {"Accept": "application/json"}
    body: bytes | None = None
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if json_body is not None:
        body = json.dumps(json_body).encode()
        headers["Content-Type"] = "application/json"
    elif form is not None:
        body = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    own = connection is None
    conn = connection or http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        if own:
            conn.close()
    if response.getheader("content-type", "").startswith("application/json"):
        return response.status, json.loads(data)
    return response.status, data


def _expect(status: int, wanted: int, what: str, body: Any) -> None:
    if status != wanted:
        raise SystemExit(f"set-up failed: {what} answered {status}, not {wanted}: {body!r}")


def set_up_over_http(port: int) -> tuple[str, UUID, UUID]:
    """A person, a workspace, a session scoped to it and one backup; the session token,
    the workspace id and the backup id."""
    status, body = request(
        port, "POST", "/idp/signup", form={"email": EMAIL, "password": PASSWORD, "name": "Bench"}
    )
    _expect(status, 201, "POST /idp/signup", body)
    status, grant = request(port, "POST", "/idp/device/code", form={"client_id": CLIENT_ID})
    _expect(status, 200, "POST /idp/device/code", grant)
    status, body = request(
        port,
        "POST",
        "/idp/device",
        form={
            "user_code": grant["user_code"],
            "email": EMAIL,
            "password": PASSWORD,
            "decision": "approve",
        },
    )
    _expect(status, 200, "POST /idp/device", body)
    status, issued = request(
        port,
        "POST",
        "/idp/token",
        form={
            "grant_type": DEVICE_GRANT,
            "device_code": grant["device_code"],
            "client_id": CLIENT_ID,
        },
    )
    _expect(status, 200, "POST /idp/token", issued)
    status, session = request(port, "POST", "/v1/auth/sessions", token=issued["access_token"])
    _expect(status, 201, "POST /v1/auth/sessions", session)
    status, workspace = request(
        port, "POST", "/v1/workspaces", token=session["token"], json_body={"name": "Bench"}
    )
    _expect(status, 201, "POST /v1/workspaces", workspace)
    workspace_id = UUID(workspace["id"])
    status, scoped = request(
        port,
        "POST",
        "/v1/auth/switch",
        token=session["token"],
        json_body={"workspace_id": str(workspace_id)},
    )
    _expect(status, 201, "POST /v1/auth/switch", scoped)
    token: str = scoped["token"]
    status, backup = request(
        port,
        "POST",
        f"/v1/workspaces/{workspace_id}/backups",
        token=token,
        json_body={"name": "bench-target", "kind": "manual"},
    )
    _expect(status, 201, "POST /v1/workspaces/{wid}/backups", backup)
    status, body = request(port, "GET", f"/v1/backups/{backup['id']}", token=token)
    _expect(status, 200, "GET /v1/backups/{id}", body)
    return token, workspace_id, UUID(backup["id"])


def lift_backup_quota(env: Mapping[str, str], workspace_id: UUID) -> None:
    """``backups_per_workspace`` = 0 (unlimited), by the operator use case (what
    ``strongroom admin quota WID backups_per_workspace 0`` runs)."""
    from strongroom.domain.quotas import QuotaResource  # noqa: PLC0415
    from strongroom.entrypoints.service import open_facade  # noqa: PLC0415
    from strongroom.entrypoints.settings import Settings  # noqa: PLC0415

    with open_facade(Settings.from_env(env), migrate=False) as facade:
        facade.workspaces.set_quota(workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 0)


# Load.


class Scenario:
    def __init__(self, key: str, title: str, kind: str, path: str, token: str | None):
        self.key = key
        self.title = title
        self.kind = kind
        self.path = path
        self.token = token


def _python_load(
    server: Server, scenario: Scenario, arguments: argparse.Namespace
) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        str(SUPPORT),
        "load",
        "--port",
        str(server.port),
        "--kind",
        scenario.kind,
        "--path",
        scenario.path,
        "--connections",
        str(arguments.connections),
        "--warmup",
        str(arguments.warmup),
        "--duration",
        str(arguments.duration),
    ]
    if scenario.token:
        command += ["--token", scenario.token]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


# wrk: the Lua script sets the Authorization header and, for POST, a new backup name per
# request (thread number and counter); done() prints one JSON line.
_WRK_LUA = """
local method, path, token, kind = %(method)s, %(path)s, %(token)s, %(kind)s
local prefix = %(prefix)s
local made = 0
function setup(thread)
  made = made + 1
  thread:set("tid", made)
end
local counter = 0
function request()
  local headers = {}
  if token ~= "" then headers["Authorization"] = "Bearer " .. token end
  if kind ~= "post" then
    return wrk.format(method, path, headers, nil)
  end
  counter = counter + 1
  headers["Content-Type"] = "application/json"
  local body = string.format('{"name":"%%s%%d-%%d","kind":"manual"}', prefix, tid or 0, counter)
  return wrk.format(method, path, headers, body)
end
function done(summary, latency, requests)
  io.write(string.format(
    'WRK-JSON {"requests":%%d,"duration_us":%%d,"non_2xx":%%d,"connect":%%d,' ..
    '"read":%%d,"write":%%d,"timeout":%%d,"p50_us":%%d,"p99_us":%%d}\\n',
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII text is a valid Lua string literal


def _wrk_command(
    wrk: str, server: Server, scenario: Scenario, arguments: argparse.Namespace, seconds: float
) -> list[str]:
    script = Path(arguments.workdir) / f"{scenario.key}.lua"
    script.write_text(
        _WRK_LUA
        % {
            "method": _lua_string("POST" if scenario.kind == "post" else "GET"),
            "path": _lua_string(scenario.path),
            "token": _lua_string(scenario.token or ""),
            "kind": _lua_string(scenario.kind),
            "prefix": _lua_string(f"bench-{uuid4().hex[:8]}-"),
        }
    )
    return [
        wrk,
        f"-t{arguments.wrk_threads}",
        f"-c{arguments.connections}",
        f"-d{max(1, round(seconds))}s",
        "-s",
        str(script),
        f"http://{HOST}:{server.port}{scenario.path}",
    ]


def _wrk_result(output: str, seconds: float) -> dict[str, Any]:
    line = next((ln for ln in output.splitlines() if ln.startswith("WRK-JSON ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no result:\n{output}")
    raw = json.loads(line.removeprefix("WRK-JSON "))
    measured = raw["duration_us"] / 1e6 or seconds
    errors = raw["connect"] + raw["read"] + raw["write"] + raw["timeout"]
    return {
        "requests": raw["requests"],
        "seconds": measured,
        "rps": raw["requests"] / measured,
        "statuses": {"non-2xx/3xx": raw["non_2xx"]} if raw["non_2xx"] else {},
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "connection_errors": errors,
        "loadgen_cpu": None,
    }


def run_scenario(
    server: Server,
    scenario: Scenario,
    arguments: argparse.Namespace,
    dbname: str | None,
) -> dict[str, Any]:
    """Load one scenario; the load generator's figures plus the CPU use of the server
    process and of the database's backends (those of ``dbname`` when the window starts)
    during the measured window."""
    db_pids: list[int] = []

    def sample(*, first: bool = False) -> tuple[float, float | None, float]:
        if first and dbname is not None:
            db_pids[:] = _backend_pids(arguments.postgres, dbname)
        return time.monotonic(), server.cpu_seconds(), _cpu_of(db_pids)

    if arguments.wrk:
        warm = _wrk_command(arguments.wrk, server, scenario, arguments, arguments.warmup)
        subprocess.run(warm, check=True, capture_output=True, text=True)
        before = sample(first=True)
        children_before = _children_cpu()
        done = subprocess.run(
            _wrk_command(arguments.wrk, server, scenario, arguments, arguments.duration),
            check=True,
            capture_output=True,
            text=True,
        )
        after = sample()
        result = _wrk_result(done.stdout, arguments.duration)
        result["loadgen_cpu"] = (_children_cpu() - children_before) / (after[0] - before[0])
    else:
        load = _python_load(server, scenario, arguments)
        assert load.stdout is not None
        lines: list[str] = []
        before = after = sample()
        try:
            for line in load.stdout:
                if line.strip() == WINDOW_START:
                    before = sample(first=True)
                elif line.strip() == WINDOW_END:
                    after = sample()
                else:
                    lines.append(line)
            if load.wait(timeout=60) != 0 or not lines:
                raise SystemExit(f"the load generator failed ({load.returncode})")
        finally:
            if load.poll() is None:  # interrupted: stop the load generator we started
                load.kill()
                load.wait()
        result = json.loads(lines[-1])
    if result["requests"] == 0:
        raise SystemExit(f"{scenario.title}: no request completed in the measured window")
    elapsed = after[0] - before[0]
    server_before, server_after = before[1], after[1]
    result["server_cpu"] = (
        None
        if server_before is None or server_after is None or elapsed <= 0
        else (server_after - server_before) / elapsed
    )
    result["db_cpu"] = (after[2] - before[2]) / elapsed if db_pids and elapsed > 0 else None
    return result


# Round trips.


def count_round_trips(
    server: Server, token: str, workspace_id: UUID, backup_id: UUID, n: int
) -> tuple[dict[str, list[list[str]]], list[str]]:
    """The statements of ``n`` GETs and ``n`` creates, sent one after the other."""
    connection = http.client.HTTPConnection(HOST, server.port, timeout=30)
    get_path = f"/v1/backups/{backup_id}"
    post_path = f"/v1/workspaces/{workspace_id}/backups"
    prefix = f"count-{uuid4().hex[:8]}"

    def one_of_each(index: int) -> None:
        status, body = request(server.port, "GET", get_path, token=token, connection=connection)
        _expect(status, 200, f"GET {get_path}", body)
        status, body = request(
            server.port,
            "POST",
            post_path,
            token=token,
            json_body={"name": f"{prefix}-{index}", "kind": "manual"},
            connection=connection,
        )
        _expect(status, 201, f"POST {post_path}", body)

    try:
        for index in range(3):  # warm the pool and the statement caches: not counted
            one_of_each(-1 - index)
        request(server.port, "GET", ROUND_TRIPS_PATH, connection=connection)
        for index in range(n):
            one_of_each(index)
        status, report = request(server.port, "GET", ROUND_TRIPS_PATH, connection=connection)
        _expect(status, 200, ROUND_TRIPS_PATH, report)
    finally:
        connection.close()
    by_kind: dict[str, list[list[str]]] = {"get": [], "post": []}
    for record in report["requests"]:
        kind = "get" if record["method"] == "GET" else "post"
        by_kind[kind].append(record["statements"])
    return by_kind, report["unattributed"]


# Report.


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _non_2xx(result: dict[str, Any]) -> int:
    return sum(
        count
        for status, count in result["statuses"].items()
        if not status.isdigit() or not 200 <= int(status) < 300
    )


def _load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "?"


def print_report(
    scenarios: list[Scenario],
    results: dict[str, list[dict[str, Any]]],
    round_trips: dict[str, list[list[str]]],
    unattributed: list[str],
) -> None:
    print()
    header = (
        f"{'scenario':<36}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'non-2xx':>9}{'conn err':>9}{'server CPU':>12}{'db CPU':>8}{'load CPU':>10}"
    )
    print(header)
    for scenario in scenarios:
        for index, result in enumerate(results[scenario.key]):
            label = (
                scenario.title
                if len(results[scenario.key]) == 1
                else (f"{scenario.title} #{index + 1}")
            )
            print(
                f"{label:<36}{result['rps']:>12.1f}{result['p50_ms']:>9.2f}"
                f"{result['p99_ms']:>9.2f}{_non_2xx(result):>9}{result['connection_errors']:>9}"
                f"{_percent(result['server_cpu']):>12}{_percent(result['db_cpu']):>8}"
                f"{_percent(result.get('loadgen_cpu')):>10}"
            )
    rps = {key: _median([r["rps"] for r in values]) for key, values in results.items()}
    print()
    rounds = len(results["hello"])
    which = "" if rounds == 1 else f" (medians of {rounds} rounds)"
    print(f"requests/s{which}:")
    for scenario in scenarios:
        print(f"  {scenario.title:<36}{rps[scenario.key]:>10.1f}")
    # Each round measures the three scenarios close together, so a ratio is taken within a
    # round (the machine's load moves all three alike), and the median of those is shown.
    get_ratios = [
        g["rps"] / h["rps"] for h, g in zip(results["hello"], results["get"], strict=True)
    ]
    post_ratios = [
        p["rps"] / h["rps"] for h, p in zip(results["hello"], results["post"], strict=True)
    ]
    get_ratio, post_ratio = _median(get_ratios), _median(post_ratios)
    print(f"ratios against the raw ASGI hello{'' if rounds == 1 else ' (medians of the rounds)'}:")
    verdict = "meets" if get_ratio >= TARGET_GET_RATIO else "misses"
    print(f"  GET  / hello = {get_ratio:.3f}   (target >= {TARGET_GET_RATIO}: {verdict})")
    print(f"  POST / hello = {post_ratio:.3f}")
    if rounds > 1:
        per_round = [f"{g:.3f}/{p:.3f}" for g, p in zip(get_ratios, post_ratios, strict=True)]
        print(f"  per round (GET/POST): {', '.join(per_round)}")
    print()
    print("database round trips per request (sequential requests on a counting server):")
    targets = {"get": TARGET_GET_ROUND_TRIPS, "post": TARGET_CREATE_ROUND_TRIPS}
    titles = {s.key: s.title for s in scenarios}
    for kind in ("get", "post"):
        lists = round_trips[kind]
        mean = sum(len(statements) for statements in lists) / len(lists)
        verdict = "meets" if mean <= targets[kind] else "misses"
        print(
            f"  {titles[kind]:<36}{mean:>6.2f}  over {len(lists)} requests"
            f"   (target <= {targets[kind]}: {verdict})"
        )
        shapes = Counter(tuple(statements) for statements in lists)
        for shape, count in shapes.most_common():
            print(f"      {count:>3} x {len(shape)}: {', '.join(shape)}")
    if unattributed:
        print(f"  statements outside any request (pool, start-up): {len(unattributed)}")


# Main.


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Strongroom HTTP throughput on PostgreSQL, as ratios of a raw ASGI hello."
    )
    parser.add_argument("--duration", type=float, default=5.0, help="measured s per scenario")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up s per scenario")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the 3 scenarios")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections")
    parser.add_argument(
        "--count-requests", type=int, default=20, help="GETs and POSTs counted for round trips"
    )
    parser.add_argument(
        "--load-generator",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="wrk when on PATH (auto), or the Python one",
    )
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk -t (default 1)")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("STRONGROOM_BENCH_POSTGRES", LOCAL_POSTGRES),
        help="conninfo of a superuser connection to the server (default: local)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    wrk = shutil.which("wrk")
    if arguments.load_generator == "wrk" and wrk is None:
        raise SystemExit("--load-generator wrk: " + WRK_HINT)
    arguments.wrk = wrk if arguments.load_generator in ("auto", "wrk") else None
    load_name = (
        f"wrk -t{arguments.wrk_threads}"
        if arguments.wrk
        else "Python (asyncio + uvloop, 1 process)"
    )

    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="strongroom-bench-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        arguments.workdir = workdir
        dbname, url = stack.enter_context(scratch_database(arguments.postgres))
        env = child_environment(url, workdir / "data")
        print(
            f"PostgreSQL {_server_version(arguments.postgres)}, scratch database {dbname}; "
            f"{os.cpu_count()} CPUs, load average {_load_average()} before"
        )
        print(
            "servers: uvicorn loop=uvloop http=httptools access_log=False, 1 worker each; "
            f"load: {load_name}, {arguments.connections} connections, "
            f"{arguments.warmup:g} s warm-up + {arguments.duration:g} s measured per scenario, "
            f"{arguments.rounds} round(s)"
        )
        if not arguments.wrk:
            print(f"note: {WRK_HINT}")

        strongroom = Server(
            "strongroom serve",
            [sys.executable, "-m", "strongroom.entrypoints.cli", "serve"],
            env,
            workdir / "strongroom.log",
        )
        stack.callback(strongroom.stop)
        hello = Server(
            "raw ASGI hello",
            [sys.executable, str(SUPPORT), "serve-hello"],
            env,
            workdir / "hello.log",
        )
        stack.callback(hello.stop)
        strongroom.wait_ready("/readyz")
        hello.wait_ready("/")

        token, workspace_id, backup_id = set_up_over_http(strongroom.port)
        lift_backup_quota(env, workspace_id)
        scenarios = [
            Scenario("hello", "raw ASGI hello", "hello", "/", None),
            Scenario("get", "GET /v1/backups/{id}", "get", f"/v1/backups/{backup_id}", token),
            Scenario(
                "post",
                "POST /v1/workspaces/{wid}/backups",
                "post",
                f"/v1/workspaces/{workspace_id}/backups",
                token,
            ),
        ]
        results: dict[str, list[dict[str, Any]]] = {s.key: [] for s in scenarios}
        for round_number in range(arguments.rounds):
            for scenario in scenarios:
                server = hello if scenario.key == "hello" else strongroom
                dbname_or_none = None if scenario.key == "hello" else dbname
                result = run_scenario(server, scenario, arguments, dbname_or_none)
                results[scenario.key].append(result)
                print(
                    f"  round {round_number + 1}: {scenario.title}: {result['rps']:.1f} requests/s",
                    flush=True,
                )
        strongroom.stop()
        hello.stop()

        counting = Server(
            "counting server",
            [sys.executable, str(SUPPORT), "serve-counting"],
            env,
            workdir / "counting.log",
        )
        stack.callback(counting.stop)
        counting.wait_ready("/readyz")
        round_trips, unattributed = count_round_trips(
            counting, token, workspace_id, backup_id, arguments.count_requests
        )
        counting.stop()

        print_report(scenarios, results, round_trips, unattributed)
        print(f"load average after: {_load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
