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
import dataclasses
import http.client
import json
import os
import platform
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
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from types import FrameType
from typing import Any
from uuid import UUID, uuid4

import psycopg
from _round_trips import RoundTripProxy
from psycopg import sql

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXED_RATE = HERE / "_fixed_rate.py"
HOST = "127.0.0.1"
LOOPBACK = (HOST, "localhost", "::1")
LOCAL_POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
PASSWORD = "correct horse battery staple"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
CLIENT_ID = "strongroom-cli"
PEER_TOKEN = "tok-anchor"
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PAGE_LIMIT = 50
NO_ID = UUID(int=0)  # before the set-up
SEED_PREFIX = "seed-"  # casefolds to itself, so name_key = name
# The peer database, exactly as ../shared/bench/README.md gives it.
PEER_SQL = """
create table api_tokens(token_hash bytea primary key, tenant_id uuid not null, revoked_at timestamptz);
create table backups(id uuid primary key, tenant_id uuid not null, name text, size bigint, state text, created_at timestamptz default now());
insert into backups select gen_random_uuid(), '11111111-1111-1111-1111-111111111111', 'b'||g, g, 'active' from generate_series(1,10000) g;
insert into api_tokens values (sha256('tok-anchor'::bytea), '11111111-1111-1111-1111-111111111111', null);
"""  # noqa: E501
# Usage counters of the workspace row and the table whose rows each counts (by workspace).
COUNTED_TABLES = {"backup_count": "backups"}
# Targets (issue 8).
GET_P99_MS = 10.0
CREATE_P99_MS = 25.0
GET_ROUND_TRIPS = 1
CREATE_ROUND_TRIPS = 2
CREATE_AT_EXISTING = 0.9
DEEP_PAGE_FACTOR = 1.2


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


# Processes and the clock.


class Server:
    """A server process of the benchmark, in a process group of its own, output to a log."""

    def __init__(
        self,
        stack: ExitStack,
        name: str,
        command: list[str],
        env: Mapping[str, str],
        log: Path,
    ):
        """Start it; ``stack`` stops it when it unwinds, whatever happens next."""
        self.name = name
        self.port = free_port()
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)],
                env=dict(env),
                cwd=log.parent,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        stack.callback(self.stop)

    def wait_ready(self, path: str) -> None:
        """Poll ``path`` until it answers 200, at most ``READY_TIMEOUT`` seconds."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.name} exited early:\n{self.log_tail()}")
            try:
                status, _ = request(self.port, "GET", path, timeout=5)
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
        """SIGINT to the group (uvicorn's graceful stop), SIGKILL if it lingers."""
        if self.process.poll() is not None:
            return
        for sig, wait in ((signal.SIGINT, STOP_TIMEOUT), (signal.SIGKILL, STOP_TIMEOUT)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (all its threads), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU time of the waited-for child processes (wrk, once it has ended)."""
    usage = os.times()
    return usage.children_user + usage.children_system


class Phases:
    """Wall time of each phase of the run, for the closing summary."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        print(f"\n== {name}", flush=True)
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - began


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    """Unwind (cleaning up) on the first SIGINT, SIGTERM or SIGHUP; ignore the next ones,
    so that a second Ctrl-C cannot cut the clean-up short."""
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    print(f"\nstopped by {signal.Signals(signum).name}: cleaning up", flush=True)
    raise SystemExit(128 + signum)


# PostgreSQL.


def admin_connection(conninfo: str, dbname: str | None = None) -> psycopg.Connection[Any]:
    """An autocommit connection as the superuser, to ``dbname`` or the admin database."""
    if dbname is not None:
        conninfo = psycopg.conninfo.make_conninfo(conninfo, dbname=dbname)
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=5)


@contextmanager
def scratch_database(admin_conninfo: str, purpose: str) -> Iterator[str]:
    """A new database for the block, dropped afterwards (also on errors); its name."""
    name = f"strongroom_bench_{purpose}_{os.getpid()}_{uuid4().hex[:6]}"
    with admin_connection(admin_conninfo) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with admin_connection(admin_conninfo) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def database_url(admin_conninfo: str, dbname: str, port: int | None = None) -> str:
    """The ``postgresql://`` URL of ``dbname`` (on ``port`` instead, for the proxy)."""
    parts = psycopg.conninfo.conninfo_to_dict(admin_conninfo)
    user = urllib.parse.quote(str(parts.get("user", "postgres")), safe="")
    password = parts.get("password")
    credentials = user if password is None else f"{user}:{urllib.parse.quote(str(password))}"
    host = str(parts.get("host", HOST))
    return f"postgresql://{credentials}@{host}:{port or parts.get('port', 5432)}/{dbname}"


def postgres_address(admin_conninfo: str) -> tuple[str, int]:
    parts = psycopg.conninfo.conninfo_to_dict(admin_conninfo)
    return str(parts.get("host", HOST)), int(str(parts.get("port", 5432)))


def backend_pids(admin_conninfo: str, dbname: str) -> list[int]:
    """The PostgreSQL backends connected to ``dbname``, whose CPU a window samples."""
    with admin_connection(admin_conninfo) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (dbname,)
        ).fetchall()
    return [int(pid) for (pid,) in rows]


# HTTP, one request at a time (set-up and counting).


def request(
    port: int,
    method: str,
    path: str,
    *,
    token: str | None = None,
    json_body: Any = None,
    form: Mapping[str, str] | None = None,
    connection: http.client.HTTPConnection | None = None,
    timeout: float = 30.0,
) -> tuple[int, Any]:
    """One request; its status and body (parsed when JSON)."""
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
    conn = connection or http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        if connection is None:
            conn.close()
    if response.getheader("content-type", "").startswith("application/json"):
        return response.status, json.loads(data)
    return response.status, data


def expect(status: int, wanted: int, what: str, body: Any) -> None:
    if status != wanted:
        raise SystemExit(f"set-up failed: {what} answered {status}, not {wanted}: {body!r}")


def sign_in(port: int, email: str) -> str:
    """Sign a new person up and in (built-in IdP, device flow); an unscoped session token."""
    form = {"email": email, "password": PASSWORD, "name": "Bench"}
    status, body = request(port, "POST", "/idp/signup", form=form)
    expect(status, 201, "POST /idp/signup", body)
    status, grant = request(port, "POST", "/idp/device/code", form={"client_id": CLIENT_ID})
    expect(status, 200, "POST /idp/device/code", grant)
    approval = {"user_code": grant["user_code"], "email": email, "password": PASSWORD}
    status, body = request(port, "POST", "/idp/device", form={**approval, "decision": "approve"})
    expect(status, 200, "POST /idp/device", body)
    token_form = {
        "grant_type": DEVICE_GRANT,
        "device_code": grant["device_code"],
        "client_id": CLIENT_ID,
    }
    status, issued = request(port, "POST", "/idp/token", form=token_form)
    expect(status, 200, "POST /idp/token", issued)
    status, session = request(port, "POST", "/v1/auth/sessions", token=issued["access_token"])
    expect(status, 201, "POST /v1/auth/sessions", session)
    token: str = session["token"]
    return token


def new_workspace(port: int, name: str) -> tuple[UUID, str]:
    """A workspace of a new person (people may own 5); its id and a session scoped to it."""
    session = sign_in(port, f"{name.lower()}-{uuid4().hex[:8]}@example.com")
    status, workspace = request(
        port, "POST", "/v1/workspaces", token=session, json_body={"name": name}
    )
    expect(status, 201, "POST /v1/workspaces", workspace)
    switch = {"workspace_id": workspace["id"]}
    status, scoped = request(port, "POST", "/v1/auth/switch", token=session, json_body=switch)
    expect(status, 201, "POST /v1/auth/switch", scoped)
    return UUID(workspace["id"]), str(scoped["token"])


def create_backup(port: int, token: str, workspace_id: UUID, name: str) -> UUID:
    status, backup = request(
        port,
        "POST",
        f"/v1/workspaces/{workspace_id}/backups",
        token=token,
        json_body={"name": name, "kind": "manual"},
    )
    expect(status, 201, "POST /v1/workspaces/{wid}/backups", backup)
    return UUID(backup["id"])


# The servers.


@dataclass
class Deployment:
    """One Strongroom under test: how it was started and what the set-up made."""

    label: str
    server: Server
    operator_flags: list[str]  # --database-url URL or --data-dir DIR
    env: dict[str, str]
    dbname: str | None = None  # PostgreSQL database, whose backends' CPU is sampled
    workspace_id: UUID = NO_ID
    token: str = ""
    backup_id: UUID = NO_ID

    def lift_backup_quota(self, workspace_id: UUID) -> None:
        """``strongroom admin quota WID backups_per_workspace 0`` (unlimited)."""
        command = [*strongroom_command(), "admin", "quota", str(workspace_id)]
        command += ["backups_per_workspace", "0", *self.operator_flags]
        done = subprocess.run(
            command,
            env=self.env,
            cwd=self.server.log.parent,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"strongroom admin quota failed:\n{done.stdout}{done.stderr}")


def strongroom_command() -> list[str]:
    return [sys.executable, "-m", "strongroom.entrypoints.cli"]


def server_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without any ``STRONGROOM_*``, plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STRONGROOM_")}
    env.update({"PYTHONUNBUFFERED": "1", "STRONGROOM_SIGNUP": "1", **extra})
    return env


def start_strongroom(
    stack: ExitStack,
    label: str,
    workdir: Path,
    extra_env: Mapping[str, str],
    operator_flags: list[str],
) -> Deployment:
    """``strongroom serve --host 127.0.0.1 --port N`` configured by ``extra_env`` (or
    ``--data-dir`` when that is the only operator flag), ready; not yet set up."""
    env = server_environment(extra_env)
    command = [*strongroom_command(), "serve", "--host", HOST]
    if operator_flags[:1] == ["--data-dir"]:
        command += operator_flags
    log = workdir / f"strongroom-{label}.log"
    server = Server(stack, f"strongroom ({label})", command, env, log)
    server.wait_ready("/readyz")
    return Deployment(label, server, operator_flags, env)


def set_up(deployment: Deployment) -> None:
    """Over HTTP: a person, a workspace, a session scoped to it and a full page of backups
    (so that the list row always lists ``PAGE_LIMIT`` of them); the quota lifted."""
    port = deployment.server.port
    deployment.workspace_id, token = new_workspace(port, "Bench")
    deployment.token = token
    deployment.lift_backup_quota(deployment.workspace_id)
    deployment.backup_id = create_backup(port, token, deployment.workspace_id, "bench-target")
    for number in range(PAGE_LIMIT):
        create_backup(port, token, deployment.workspace_id, f"bench-{number}")
    status, body = request(port, "GET", f"/v1/backups/{deployment.backup_id}", token=token)
    expect(status, 200, "GET /v1/backups/{id}", body)


@dataclass
class Peers:
    """The shared peers, served as their README says."""

    ceiling: Server
    peers: Server
    dbname: str
    backup_id: UUID


def start_peers(stack: ExitStack, peers_dir: Path, dsn: str, dbname: str, workdir: Path) -> Peers:
    """``uvicorn raw_hello:app`` and ``uvicorn peers:app`` from ``peers_dir``, as they are."""
    options = ["--app-dir", str(peers_dir), "--host", HOST, "--loop", "uvloop"]
    options += ["--http", "httptools", "--no-access-log"]
    env = server_environment({"ANCHOR_DSN": dsn})
    uvicorn = [sys.executable, "-m", "uvicorn"]
    ceiling = Server(
        stack, "raw_hello:app", [*uvicorn, "raw_hello:app", *options], env, workdir / "raw.log"
    )
    peers = Server(
        stack, "peers:app", [*uvicorn, "peers:app", *options], env, workdir / "peers.log"
    )
    with psycopg.connect(dsn, connect_timeout=5) as conn:
        row = conn.execute("SELECT id FROM backups ORDER BY name LIMIT 1").fetchone()
    assert row is not None
    started = Peers(ceiling, peers, dbname, UUID(str(row[0])))
    ceiling.wait_ready("/")
    peers.wait_ready("/hello")
    status, body = request(peers.port, "GET", f"/backups/{started.backup_id}", token=PEER_TOKEN)
    expect(status, 200, "peers GET /backups/{id}", body)
    return started


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


# Round trips, counted by a proxy in front of PostgreSQL.


@dataclass
class RoundTrips:
    """Round trips of ``n`` sequential requests of one kind."""

    per_request: list[list[tuple[str, ...]]] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return sum(len(turns) for turns in self.per_request) / len(self.per_request)

    def shapes(self) -> list[tuple[int, str]]:
        """Each distinct sequence of round trips, with how many requests made it."""
        names = Counter(
            " | ".join("+".join(turn) or "?" for turn in turns) or "(none)"
            for turns in self.per_request
        )
        return [(count, shape) for shape, count in names.most_common()]


# The counting server runs none of the service's background jobs (scheduler, lease
# expiry, restore runner, executors, verification, retention): their statements share the
# pool and the proxy, and would be counted against whichever request they met.
QUIET_BACKGROUND = {
    "STRONGROOM_SCHEDULER_INTERVAL": "0",
    "STRONGROOM_LEASE_INTERVAL": "0",
    "STRONGROOM_RESTORE_POLL": "0",
    "STRONGROOM_EXECUTORS": "0",
    "STRONGROOM_VERIFY_PENDING_INTERVAL": "0",
    "STRONGROOM_VERIFY_INTERVAL": "0",
    "STRONGROOM_RETENTION_INTERVAL": "0",
}


def count_round_trips(
    deployment: Deployment, proxy: RoundTripProxy, options: argparse.Namespace
) -> dict[str, RoundTrips]:
    """Each row's requests, one at a time (after uncounted warm-ups), through the proxy."""
    targets = row_targets(deployment)
    port = deployment.server.port
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    prefix = f"count-{uuid4().hex[:8]}-"
    sent = Counter[str]()

    def send(key: str) -> None:
        target = targets[key]
        sent[key] += 1
        body = {"name": f"{prefix}{sent[key]}", "kind": "manual"} if key == "create" else None
        status, answer = request(
            port,
            target.method,
            target.path,
            token=target.token,
            json_body=body,
            connection=connection,
        )
        if not 200 <= status < 300:
            raise SystemExit(f"counting: {target.method} {target.path} answered {status}: {answer}")

    counted: dict[str, RoundTrips] = {row.key: RoundTrips() for row in ROWS}
    try:
        for _ in range(options.count_warmup):
            for row in ROWS:
                send(row.key)
        for _ in range(options.count_requests):
            for row in ROWS:
                proxy.wait_quiet()
                mark = proxy.mark()
                send(row.key)
                proxy.wait_quiet()
                counted[row.key].per_request.append(proxy.since(mark))
    finally:
        connection.close()
    return counted


# Create throughput with existing backups; a page deep in a list.


def seed_backups(
    options: argparse.Namespace, dbname: str, template: UUID, workspace_id: UUID, count: int
) -> None:
    """``count`` copies of the ``template`` backup in ``workspace_id``, by one INSERT ...
    SELECT: new ids and names, created 1 ms apart before the template (oldest last). Generated
    columns (the stored JSON body) are left to the database."""
    with admin_connection(options.postgres, dbname) as conn:
        conn.execute("SET statement_timeout = '15min'")
        columns = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema ="
                " current_schema() AND table_name = 'backups' AND is_generated = 'NEVER'"
                " ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert SEED_PREFIX.casefold() == SEED_PREFIX
        stamp = sql.SQL("t.created_at - g * interval '1 millisecond'")
        name = sql.SQL("{} || g").format(sql.Literal(SEED_PREFIX))
        overrides = {
            "id": sql.SQL("gen_random_uuid()"),
            "workspace_id": sql.Literal(workspace_id),
            "name": name,
            "name_key": name,
            "created_at": stamp,
            "updated_at": stamp,
        }
        values = [overrides.get(c, sql.SQL("t.{}").format(sql.Identifier(c))) for c in columns]
        statement = sql.SQL(
            "INSERT INTO backups ({}) SELECT {} FROM backups t, generate_series(1, {}) g"
            " WHERE t.id = {}"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(values),
            sql.Literal(count),
            sql.Literal(template),
        )
        inserted = conn.execute(statement).rowcount
        if inserted != count:
            raise SystemExit(f"seeding inserted {inserted} backups, not {count}")


def recompute_usage_counters(options: argparse.Namespace, dbname: str) -> list[str]:
    """Set every ``workspaces.*_count`` column from the rows it counts (seeding by SQL
    bypasses them); the columns recomputed."""
    with admin_connection(options.postgres, dbname) as conn:
        counters = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema ="
                " current_schema() AND table_name = 'workspaces' AND column_name LIKE %s",
                ("%\\_count",),
            ).fetchall()
        ]
        for column in counters:
            table = COUNTED_TABLES.get(column)
            if table is None:
                raise SystemExit(
                    f"workspaces.{column}: unknown usage counter; add the table it counts to"
                    " COUNTED_TABLES in bench/fast_path.py"
                )
            conn.execute(
                sql.SQL(
                    "UPDATE workspaces w SET {} = (SELECT count(*) FROM {} t"
                    " WHERE t.workspace_id = w.id)"
                ).format(sql.Identifier(column), sql.Identifier(table))
            )
        conn.execute("VACUUM (ANALYZE) backups")
    return counters


def deep_cursor(options: argparse.Namespace, dbname: str, workspace_id: UUID, depth: int) -> str:
    """The cursor the server gives after the item at ``depth`` (newest first), built with
    the server's own ``Cursor``."""
    from strongroom.domain.pagination import Cursor  # noqa: PLC0415 (the installed package)

    with admin_connection(options.postgres, dbname) as conn:
        row = conn.execute(
            "SELECT created_at, id FROM backups WHERE workspace_id = %s"
            " ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1",
            (workspace_id, depth - 1),
        ).fetchone()
    if row is None:
        raise SystemExit(f"no backup at depth {depth}")
    cursor: str = Cursor(row[0].astimezone(UTC), row[1]).encode()
    return cursor


def create_with_existing(deployment: Deployment, options: argparse.Namespace) -> dict[str, Any]:
    """Creates in a new empty workspace against creates in one of ``--existing`` backups,
    interleaved (order alternating), one new empty workspace per round."""
    port, db = deployment.server.port, deployment.dbname
    full_id, full_token = new_workspace(port, "Full")
    seed_backups(options, str(db), deployment.backup_id, full_id, options.existing)
    deployment.lift_backup_quota(full_id)
    counters = recompute_usage_counters(options, str(db))
    full = Target(
        "create", deployment.server, "POST", f"/v1/workspaces/{full_id}/backups", full_token, db
    )
    ratios, empties, fulls = [], [], []
    for number in range(options.rounds):
        empty_id, empty_token = new_workspace(port, "Empty")
        deployment.lift_backup_quota(empty_id)
        path = f"/v1/workspaces/{empty_id}/backups"
        empty = Target("create", deployment.server, "POST", path, empty_token, db)
        pair = [("empty", empty), ("full", full)]
        measured = {
            name: measure(target, options, f"create, {name} workspace")
            for name, target in (pair if number % 2 == 0 else pair[::-1])
        }
        empties.append(measured["empty"])
        fulls.append(measured["full"])
        ratios.append(measured["full"].rps / measured["empty"].rps)
    return {
        "existing": options.existing,
        "usage_counters_recomputed": counters,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "empty_rps": statistics.median(w.rps for w in empties),
        "full_rps": statistics.median(w.rps for w in fulls),
        "empty": [dataclasses.asdict(w) for w in empties],
        "full": [dataclasses.asdict(w) for w in fulls],
    }


def deep_page(deployment: Deployment, options: argparse.Namespace) -> dict[str, Any]:
    """Page 1 against the page after cursor depth ``--depth`` of one workspace, by wrk."""
    port, db = deployment.server.port, deployment.dbname
    workspace_id, token = new_workspace(port, "Deep")
    count = options.depth + PAGE_LIMIT + 1  # the deep page is full and has a next page
    seed_backups(options, str(db), deployment.backup_id, workspace_id, count)
    recompute_usage_counters(options, str(db))
    cursor = deep_cursor(options, str(db), workspace_id, options.depth)
    base = f"/v1/workspaces/{workspace_id}/backups?limit={PAGE_LIMIT}"
    for path in (base, f"{base}&cursor={cursor}"):
        status, body = request(port, "GET", path, token=token)
        expect(status, 200, f"GET {path}", body)
        if len(body["data"]) != PAGE_LIMIT or body["next_cursor"] is None:
            raise SystemExit(f"GET {path}: not a full page with a next one")
    server = deployment.server
    first = Target("list", server, "GET", base, token, db)
    deep = Target("list", server, "GET", f"{base}&cursor={cursor}", token, db)
    p50s, throughputs, firsts, deeps = [], [], [], []
    for number in range(options.rounds):
        pair = [("page 1", first), (f"page at depth {options.depth}", deep)]
        measured = {
            name: measure(target, options, name)
            for name, target in (pair if number % 2 == 0 else pair[::-1])
        }
        one, far = measured["page 1"], measured[f"page at depth {options.depth}"]
        firsts.append(one)
        deeps.append(far)
        p50s.append(far.p50_ms / one.p50_ms)
        throughputs.append(one.rps / far.rps)
    return {
        "depth": options.depth,
        "p50_factor": statistics.median(p50s),
        "throughput_factor": statistics.median(throughputs),
        "page_1_rps": statistics.median(w.rps for w in firsts),
        "deep_rps": statistics.median(w.rps for w in deeps),
        "page_1_p50_ms": statistics.median(w.p50_ms for w in firsts),
        "deep_p50_ms": statistics.median(w.p50_ms for w in deeps),
        "page_1": [dataclasses.asdict(w) for w in firsts],
        "deep": [dataclasses.asdict(w) for w in deeps],
    }


# The report.


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


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


# The run.


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


def ensure_wrk() -> str:
    """wrk from PATH; installed from Debian when missing and root; otherwise exit."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        raise SystemExit("wrk is missing: run `apt-get install -y wrk` as root, then again")
    print("wrk is missing: apt-get install -y wrk", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "wrk"]):
        subprocess.run(command, env=env, check=True, timeout=600)
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("apt-get install wrk did not give a wrk on PATH")
    return found


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


def proxied_round_trips(
    stack: ExitStack,
    deployment: Deployment,
    extra_env: Mapping[str, str],
    options: argparse.Namespace,
) -> dict[str, Any]:
    """A second server on the same database, reaching it through the counting proxy."""
    proxy = RoundTripProxy(postgres_address(options.postgres))
    stack.callback(proxy.close)
    assert deployment.dbname is not None
    url = database_url(options.postgres, deployment.dbname, proxy.port)
    env = {
        **extra_env,
        **QUIET_BACKGROUND,
        "STRONGROOM_DATABASE_URL": f"{url}?sslmode=disable&gssencmode=disable",
    }
    counting = start_strongroom(stack, "postgres-via-proxy", options.workdir, env, [])
    counting.workspace_id, counting.token = deployment.workspace_id, deployment.token
    counting.backup_id = deployment.backup_id
    trips = count_round_trips(counting, proxy, options)
    counting.server.stop()
    proxy.close()
    return {
        key: {"mean": t.mean, "requests": len(t.per_request), "shapes": t.shapes()}
        for key, t in trips.items()
    }


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
