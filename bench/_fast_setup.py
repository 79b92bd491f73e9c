"""Set-up of ``fast_path.py``: the processes it starts (peers, ``strongroom serve``), the
scratch PostgreSQL databases, one-at-a-time HTTP requests, and a workspace signed up, signed
in and filled over the HTTP API, its quota lifted by ``strongroom admin quota``.

Every process runs in a process group of its own and is registered on an ``ExitStack``
that stops it (SIGINT, then SIGKILL) whatever happens; every database is dropped.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
from _servers import (
    DEVICE_GRANT,
    HOST,
    PASSWORD,
    READY_TIMEOUT,
    STOP_TIMEOUT,
    admin_quota,
    free_port,
    server_environment,
    strongroom_command,
)
from psycopg import sql

CLIENT_ID = "strongroom-cli"
PEER_TOKEN = "tok-anchor"
PAGE_LIMIT = 50
NO_ID = UUID(int=0)  # before the set-up
# The peer database, exactly as ../shared/bench/README.md gives it.
PEER_SQL = """
create table api_tokens(token_hash bytea primary key, tenant_id uuid not null, revoked_at timestamptz);
create table backups(id uuid primary key, tenant_id uuid not null, name text, size bigint, state text, created_at timestamptz default now());
insert into backups select gen_random_uuid(), '11111111-1111-1111-1111-111111111111', 'b'||g, g, 'active' from generate_series(1,10000) g;
insert into api_tokens values (sha256('tok-anchor'::bytea), '11111111-1111-1111-1111-111111111111', null);
"""  # noqa: E501


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
        admin_quota(self.env, workspace_id, "backups_per_workspace", 0, self.operator_flags)


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
