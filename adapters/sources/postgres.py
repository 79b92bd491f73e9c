"""Reading a PostgreSQL source: ``pg_dump --format=custom``, streamed as it is written.

The password reaches ``pg_dump`` only through ``PGPASSWORD`` in the child's own
environment (never its arguments, never this process's environment), with
``--no-password`` so it never waits for a prompt, and no password file is read. The host
is resolved here and every address checked against the endpoint policy (contract 13);
``pg_dump`` is then given the checked address as ``hostaddr`` (the name stays ``host`` for
TLS), so it connects nowhere else. Its standard error is kept (the last ``STDERR_KEPT``
bytes) and, scrubbed of the password, becomes the run's error when it fails. Closing the
stream early kills the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shutil
import socket
from collections.abc import AsyncIterator, Mapping

from strongroom.adapters.resolver import Resolver, system_resolver
from strongroom.domain.backups import PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024
STDERR_KEPT = 16 * 1024
CONNECT_TIMEOUT = 10
UNREACHABLE = "source postgres: the database server is unreachable"
_UNREACHABLE_SIGNS = (
    "could not connect",
    "connection refused",
    "could not translate host name",
    "timeout expired",
    "no route to host",
    "network is unreachable",
)


def _quote(value: str) -> str:
    """A libpq connection-string value, quoted."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def scrubbed(text: str, secrets: list[str]) -> str:
    """``text`` with every secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def failure_message(stderr: str, secrets: list[str]) -> str:
    """The run's error for a failed ``pg_dump``: unreachable servers in one answer, other
    failures with ``pg_dump``'s first error line, scrubbed of the secrets."""
    clean = scrubbed(stderr, secrets)
    lowered = clean.lower()
    if any(sign in lowered for sign in _UNREACHABLE_SIGNS) and "authentication" not in lowered:
        return UNREACHABLE
    lines = [line.strip() for line in clean.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line or "FATAL" in line] or lines
    detail = errors[0].removeprefix("pg_dump: error: ") if errors else "no message"
    if "password authentication failed" in lowered:
        return f"source postgres: authentication failed ({detail})"[:2000]
    return f"source postgres: pg_dump failed ({detail})"[:2000]


class PostgresSourceReader:
    """Dumps PostgreSQL sources with ``pg_dump`` (see the module documentation)."""

    def __init__(
        self,
        policy: EndpointPolicy,
        resolve: Resolver | None = None,
        pg_dump: str | None = None,
    ) -> None:
        self._policy = policy
        self._resolve = resolve or system_resolver
        self._pg_dump = pg_dump

    async def _address(self, source: PostgresSource) -> str:
        """The first address of the host, when every address it has is allowed."""
        try:
            addresses = await asyncio.to_thread(self._resolve, source.host, source.port)
        except (OSError, socket.gaierror):
            raise SourceError(UNREACHABLE) from None
        allowed = [a for a in addresses if self._policy.allows(ipaddress.ip_address(a))]
        if not addresses or len(allowed) != len(addresses):
            logger.info("a postgres source names an address outside the endpoint policy")
            raise SourceError(UNREACHABLE)
        return allowed[0]

    def read(self, source: PostgresSource, credentials: Mapping[str, str]) -> AsyncIterator[bytes]:
        """The custom-format dump of ``source.database``."""
        return self._dump(source, dict(credentials))

    async def _dump(
        self, source: PostgresSource, credentials: dict[str, str]
    ) -> AsyncIterator[bytes]:
        program = self._pg_dump or shutil.which("pg_dump")
        if program is None:
            raise SourceError("source postgres: pg_dump is not installed on this executor")
        address = await self._address(source)
        password = credentials["password"]
        conninfo = " ".join(
            f"{name}={_quote(value)}"
            for name, value in (
                ("host", source.host),
                ("hostaddr", address),
                ("port", str(source.port)),
                ("dbname", source.database),
                ("user", credentials["username"]),
                ("connect_timeout", str(CONNECT_TIMEOUT)),
                ("application_name", "strongroom"),
            )
        )
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "PGPASSWORD": password,
            "PGPASSFILE": os.devnull,
        }
        process = await asyncio.create_subprocess_exec(
            program,
            "--format=custom",
            "--no-password",
            f"--dbname={conninfo}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        stderr = bytearray()

        async def collect() -> None:
            assert process.stderr is not None
            while block := await process.stderr.read(4096):
                stderr.extend(block)
                del stderr[:-STDERR_KEPT]

        collecting = asyncio.ensure_future(collect())
        finished = False
        try:
            while chunk := await process.stdout.read(CHUNK):
                yield chunk
            await collecting
            code = await process.wait()
            finished = True
        finally:
            if not finished:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                collecting.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.shield(process.wait())
        if code != 0:
            text = stderr.decode("utf-8", "replace")
            raise SourceError(failure_message(text, [password]))
