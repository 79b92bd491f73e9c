"""A PostgreSQL server for tests, and databases of their own on it.

The server is the local one on 127.0.0.1:5432 (user ``postgres``, trust authentication),
or, when none answers there, a throwaway cluster started with ``initdb`` and ``pg_ctl`` in
a temporary directory on a free port. ``STRONGROOM_TEST_POSTGRES`` names another server
(a conninfo of a superuser connection), or is ``initdb`` to always use a throwaway
cluster. When no server can be had, ``postgres_server`` raises: tests that need PostgreSQL
fail, they are never skipped.

Database names carry the process id and a random suffix, so parallel test processes
(pytest-xdist) never share one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any
from uuid import uuid4

import attrs
import psycopg
from psycopg import sql

LOCAL = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
_START_TIMEOUT = 60


class NoPostgresError(RuntimeError):
    """Neither a local server nor a throwaway cluster could be had."""


@attrs.frozen
class PostgresServer:
    """Where a server listens, and how to reach one of its databases."""

    admin_conninfo: str
    # A throwaway cluster's data directory (``postmaster.pid`` names its server process).
    data_dir: Path | None = None

    def conninfo(self, dbname: str) -> str:
        """The conninfo of database ``dbname`` on this server."""
        return psycopg.conninfo.make_conninfo(self.admin_conninfo, dbname=dbname)

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit superuser connection to the maintenance database."""
        return psycopg.connect(self.admin_conninfo, autocommit=True, connect_timeout=5)


def _answers(conninfo: str) -> bool:
    try:
        with psycopg.connect(conninfo, connect_timeout=3) as connection:
            connection.execute("SELECT 1")
    except psycopg.OperationalError:
        return False
    return True


def _free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_unprivileged(command: list[str]) -> list[str]:
    """``initdb`` and ``postgres`` refuse to run as root: run them as ``postgres`` then."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def server_tool(name: str) -> str:
    """A PostgreSQL server program: on PATH, or where Debian's packages put it
    (``/usr/lib/postgresql/<version>/bin``, newest version first)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(
        Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
        key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0,
        reverse=True,
    )
    if not candidates:
        raise NoPostgresError(f"no PostgreSQL on 127.0.0.1:5432 and no {name} installed")
    return str(candidates[0])


@contextmanager
def throwaway_cluster() -> Iterator[PostgresServer]:
    """A new cluster in a temporary directory, stopped and deleted afterwards."""
    initdb, pg_ctl = server_tool("initdb"), server_tool("pg_ctl")
    workdir = Path(tempfile.mkdtemp(prefix="strongroom-pg-"))
    data, port = workdir / "data", _free_port()
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(workdir, account.pw_uid, account.pw_gid)
    run = _as_unprivileged
    try:
        subprocess.run(
            run(
                [
                    initdb,
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--no-instructions",
                ]
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            run(
                [
                    pg_ctl,
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(workdir / "log"),
                    "-w",
                    "-t",
                    str(_START_TIMEOUT),
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError) as error:
        shutil.rmtree(workdir, ignore_errors=True)
        detail = getattr(error, "stderr", b"") or b""
        raise NoPostgresError(f"could not start a throwaway cluster: {error} {detail!r}") from error
    try:
        yield PostgresServer(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", data)
    finally:
        subprocess.run(
            run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """The configured or local server, else a throwaway cluster; ``NoPostgresError`` if none."""
    configured = os.environ.get("STRONGROOM_TEST_POSTGRES")
    if configured == "initdb":
        with throwaway_cluster() as server:
            yield server
    elif configured:
        if not _answers(configured):
            raise NoPostgresError(f"STRONGROOM_TEST_POSTGRES does not answer: {configured}")
        yield PostgresServer(configured)
    elif _answers(LOCAL):
        yield PostgresServer(LOCAL)
    else:
        with throwaway_cluster() as server:
            yield server


def create_database(server: PostgresServer, prefix: str = "strongroom_test") -> str:
    """A new empty database with a name no other process uses; its name."""
    name = f"{prefix}_{os.getpid()}_{uuid4().hex[:10]}"
    with server.admin() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def drop_database(server: PostgresServer, name: str) -> None:
    """Drop a database, disconnecting whoever is still on it."""
    with server.admin() as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def scratch_database(server: PostgresServer, prefix: str = "strongroom_test") -> Iterator[str]:
    """A database of its own for the ``with`` block; its conninfo."""
    name = create_database(server, prefix)
    try:
        yield server.conninfo(name)
    finally:
        drop_database(server, name)


def truncate_all(
    connection: psycopg.Connection[Any], keep: tuple[str, ...] = ("schema_migrations",)
) -> None:
    """Empty every table of the public schema but ``keep``, in one statement."""
    tables = [
        name
        for (name,) in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        )
        if name not in keep
    ]
    if tables:
        connection.execute(
            sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                sql.SQL(", ").join(sql.Identifier(name) for name in tables)
            )
        )


@attrs.frozen
class StoppedCluster:
    """A PostgreSQL cluster paused by SIGSTOP of its postmaster, then of every process it
    started (so no new backend is forked in between), and resumed by SIGCONT."""

    data_dir: Path

    def _processes(self) -> list[int]:
        postmaster = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        children = [
            int(entry.name)
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _parent_of(entry) == postmaster
        ]
        return [postmaster, *children]

    def pause(self) -> None:
        for pid in self._processes():
            _signal(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in reversed(self._processes()):
            _signal(pid, signal.SIGCONT)


def _signal(pid: int, number: signal.Signals) -> None:
    """Send ``number`` to ``pid`` unless it has exited since it was listed (a backend
    whose client went away ends as soon as it runs again)."""
    with suppress(ProcessLookupError):
        os.kill(pid, number)


def _parent_of(process: Path) -> int | None:
    """The parent process id of ``/proc/<pid>``, or ``None`` when it has gone."""
    try:
        stat = (process / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])
