"""Restore a ``postgres`` cloud artifact into an empty database (contract 11).

The artifact is raw ``pg_dump --format=custom`` output. It is fed, as it streams from
storage, to ``pg_restore --no-owner --no-privileges --exit-on-error --single-transaction``
on stdin (a failure leaves the database as empty as it was). The target
database must exist and be empty (``EMPTY_CHECK``: no schema besides ``public`` and the
system ones, and nothing in ``public``), checked with ``psql`` first.

Secrets: the user name and password reach the child processes only as ``PGUSER`` and
``PGPASSWORD`` in their environment (never argv, which any local user may read); the
environment is built from nothing, so the service's own ``PG*`` settings never leak in.
The host goes through the outbound policy (``strongroom.adapters.outbound``): resolved
within the budget, every address judged, the tools given the judged address
(``hostaddr``) and the budget's ``connect_timeout``. What the tools print is never
reported (only their exit code is logged): failing to connect or to check the database
is "the restore target could not be reached" (at the budget's floor), a ``pg_restore``
that fails is "the restore target refused the restore".
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping

from strongroom.adapters.outbound.policy import Outbound, Stage, outbound_for
from strongroom.adapters.resolver import Resolver
from strongroom.domain.backups import PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.storage import ObjectReader

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024
# The empty check runs one small query: connecting is bounded by the budget, this by
# the whole of it.
CHECK_TIMEOUT = 60
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


class _MissingToolError(RestoreFailedError):
    """A client tool is not installed (the service's fault, said as it is)."""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise _MissingToolError(
            f"{name} is not installed on the service (Debian: postgresql-client)"
        )
    return found


def _quoted(value: str) -> str:
    """A libpq connection-string value, quoted."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def connection(
    target: PostgresSource, credentials: Mapping[str, str], outbound: Outbound
) -> tuple[str, dict[str, str]]:
    """The connection string (no secret in it) and the child environment (the password)
    for ``target``, at an address the policy allows (``UnreachableError`` otherwise)."""
    addresses = outbound.addresses(target.host, target.port)
    parts = {
        "host": target.host,
        "hostaddr": addresses[0],
        "port": str(target.port),
        "dbname": target.database,
        "connect_timeout": str(outbound.budget.libpq_timeout),
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


class _ToolFailedError(Exception):
    """A client tool exited with an error (its words are not reported)."""


def is_empty(conninfo: str, env: Mapping[str, str]) -> bool:
    """Whether the target database holds nothing (see ``EMPTY_CHECK``);
    ``_ToolFailedError`` when ``psql`` cannot tell."""
    result = subprocess.run(  # noqa: S603 (argv of our own, no shell)
        [_tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo],
        input=EMPTY_CHECK,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=CHECK_TIMEOUT,
        check=False,
    )
    if result.returncode != 0:
        logger.info("a postgres restore target failed: psql exited with %d", result.returncode)
        raise _ToolFailedError()
    return result.stdout.strip() == "0"


def restore_postgres(
    artifact: ObjectReader,
    target: PostgresSource,
    credentials: Mapping[str, str],
    policy: EndpointPolicy | Outbound,
    *,
    resolve: Resolver | None = None,
) -> None:
    """Blocking: ``pg_restore`` the dump ``artifact`` into the empty database ``target``."""
    outbound = outbound_for(policy, resolve)
    with outbound.stage(Stage.RESTORE_TARGET, RestoreFailedError, keep=(_MissingToolError,)):
        conninfo, env = connection(target, credentials, outbound)
        empty = is_empty(conninfo, env)
    if not empty:
        raise RestoreFailedError(
            "the target database is not empty: a restore needs an existing empty database "
            "(no schema but public, and nothing in public)"
        )
    with outbound.stage(Stage.RESTORE_WRITE, RestoreFailedError, keep=(RestoreFailedError,)):
        _pg_restore(artifact, conninfo, env)


def _pg_restore(artifact: ObjectReader, conninfo: str, env: Mapping[str, str]) -> None:
    argv = [
        _tool("pg_restore"),
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        # All or nothing: a dump cut short or refused leaves the database empty as it was.
        "--single-transaction",
        f"--dbname={conninfo}",
    ]
    with subprocess.Popen(  # noqa: S603 (argv of our own, no shell)
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(env),
    ) as process:
        fed = feed_dump(artifact, process)
        code = process.wait()
    if code != 0:
        logger.info("a postgres restore target failed: pg_restore exited with %d", code)
        raise _ToolFailedError()
    if not fed:
        raise RestoreFailedError("pg_restore stopped before reading the whole dump")


def feed_dump(artifact: ObjectReader, process: subprocess.Popen[bytes]) -> bool:
    """Copy the dump into the tool's stdin and close it; whether all of it went in (the
    tool may stop early: its exit code and stderr say why). Killed on any other error."""
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
