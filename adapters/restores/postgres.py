"""Restore a ``postgres`` cloud artifact into an empty database (contract 11).

The artifact is raw ``pg_dump --format=custom`` output. It is fed, as it streams from
storage, to ``pg_restore --no-owner --no-privileges --exit-on-error --single-transaction``
on stdin (a failure leaves the database as empty as it was). The target
database must exist and be empty (``EMPTY_CHECK``: no schema besides ``public`` and the
system ones, and nothing in ``public``), checked with ``psql`` first.

Secrets: the user name and password reach the child processes only as ``PGUSER`` and
``PGPASSWORD`` in their environment (never argv, which any local user may read); the
environment is built from nothing, so the service's own ``PG*`` settings never leak in;
whatever the tools print is scrubbed of every credential value before it is reported. The
host is resolved here, every address checked against the outbound policy, and the tools
are given the checked address (``hostaddr``) so that they never resolve the name again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Mapping

from strongroom.adapters.resolver import Resolver, system_resolver
from strongroom.adapters.restores.scrub import scrubbed
from strongroom.domain.backups import PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.storage import ObjectReader

CHUNK = 1024 * 1024
# The tail of a tool's stderr kept for the error message.
STDERR_TAIL = 4096
CONNECT_TIMEOUT = 10
# What "empty" means for a target database: no schema of its own (only public and the
# system schemas), and no relation, function, type or extension-owned object in public.
EMPTY_CHECK = """
SELECT
  (SELECT count(*) FROM pg_namespace
     WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\\_%')
  + (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public')
  + (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'public')
  + (SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
       WHERE n.nspname = 'public')
"""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RestoreFailedError(
            f"{name} is not installed on the service (Debian: postgresql-client)"
        )
    return found


def _quoted(value: str) -> str:
    """A libpq connection-string value, quoted."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def connection(
    target: PostgresSource,
    credentials: Mapping[str, str],
    policy: EndpointPolicy,
    resolve: Resolver | None = None,
) -> tuple[str, dict[str, str]]:
    """The connection string (no secret in it) and the child environment (the password)
    for ``target``, at an address ``policy`` allows."""
    # A name that does not resolve and one that resolves outside the policy get the same
    # answer, as for S3 endpoints: a restore is no probe of what a name points at.
    unreachable = RestoreFailedError(
        f"could not connect to the target database: {target.host} cannot be reached"
    )
    try:
        addresses = (resolve or system_resolver)(target.host, target.port)
    except OSError:
        raise unreachable from None
    allowed = [address for address in addresses if policy.allows(address)]
    if not addresses or len(allowed) != len(addresses):
        raise unreachable
    parts = {
        "host": target.host,
        "hostaddr": allowed[0],
        "port": str(target.port),
        "dbname": target.database,
        "connect_timeout": str(CONNECT_TIMEOUT),
        "application_name": "strongroom-restore",
    }
    conninfo = " ".join(f"{key}={_quoted(value)}" for key, value in parts.items())
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PGUSER": credentials["username"],
        "PGPASSWORD": credentials["password"],
    }
    return conninfo, env


def check_empty(conninfo: str, env: Mapping[str, str], credentials: Mapping[str, str]) -> None:
    """Refuse a target database that holds anything (see ``EMPTY_CHECK``)."""
    result = subprocess.run(  # noqa: S603 (argv of our own, no shell)
        [_tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo],
        input=EMPTY_CHECK,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=CONNECT_TIMEOUT * 6,
        check=False,
    )
    if result.returncode != 0:
        raise RestoreFailedError(
            "could not connect to the target database: "
            + scrubbed(_last_lines(result.stderr), credentials)
        )
    if result.stdout.strip() != "0":
        raise RestoreFailedError(
            "the target database is not empty: a restore needs an existing empty database "
            "(no schema but public, and nothing in public)"
        )


def restore_postgres(
    artifact: ObjectReader,
    target: PostgresSource,
    credentials: Mapping[str, str],
    policy: EndpointPolicy,
    *,
    resolve: Resolver | None = None,
) -> None:
    """Blocking: ``pg_restore`` the dump ``artifact`` into the empty database ``target``."""
    conninfo, env = connection(target, credentials, policy, resolve)
    check_empty(conninfo, env, credentials)
    argv = [
        _tool("pg_restore"),
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        # All or nothing: a dump cut short or refused leaves the database empty as it was.
        "--single-transaction",
        f"--dbname={conninfo}",
    ]
    tail: deque[bytes] = deque(maxlen=64)
    with subprocess.Popen(  # noqa: S603 (argv of our own, no shell)
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        stderr = process.stderr
        assert stderr is not None
        drain = threading.Thread(target=lambda: tail.extend(stderr), daemon=True)
        drain.start()
        fed = _feed(artifact, process)
        code = process.wait()
        drain.join()
    if code != 0:
        said = scrubbed(_last_lines(b"".join(tail).decode("utf-8", "replace")), credentials)
        raise RestoreFailedError(f"pg_restore failed (exit {code}): {said}")
    if not fed:
        raise RestoreFailedError("pg_restore stopped before reading the whole dump")


def _feed(artifact: ObjectReader, process: subprocess.Popen[bytes]) -> bool:
    """Copy the dump into the tool's stdin; whether all of it went in."""
    stdin = process.stdin
    assert stdin is not None
    try:
        while chunk := artifact.read(CHUNK):
            stdin.write(chunk)
        stdin.close()
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            stdin.close()
        return False  # it stopped early; its exit code and stderr say why
    except BaseException:
        process.kill()
        raise
    return True


def _last_lines(text: str) -> str:
    """The end of a tool's output, on one line, short enough for an error message."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = " | ".join(lines[-5:])
    return joined[-STDERR_TAIL:] or "no message"
