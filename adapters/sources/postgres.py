"""Reading a PostgreSQL source: ``pg_dump --format=custom``, streamed as it is written.

The password reaches ``pg_dump`` only through ``PGPASSWORD`` in the child's own
environment (never its arguments, never this process's environment), with
``--no-password`` so it never waits for a prompt, and no password file is read. The host
goes through the outbound policy (``strongroom.adapters.outbound``): resolved within the
budget, every address judged, and ``pg_dump`` given the judged address as ``hostaddr``
(the name stays ``host`` for TLS) with the budget's ``connect_timeout``, so it connects
nowhere else. A failure before the dump's first byte is "the source could not be
reached" (answered at the budget's floor: a closed port, a silent one, another protocol,
a wrong database or role all look alike), after it "the source failed while it was
read"; ``pg_dump``'s own words stay out of the run (only its exit code is logged).
Closing the stream early kills the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator, Mapping

from strongroom.adapters.outbound.policy import Outbound, Stage, UnreachableError, outbound_for
from strongroom.adapters.resolver import Resolver
from strongroom.domain.backups import PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024
STDERR_KEPT = 16 * 1024


def _quote(value: str) -> str:
    """A libpq connection-string value, quoted."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PostgresSourceReader:
    """Dumps PostgreSQL sources with ``pg_dump`` (see the module documentation)."""

    def __init__(
        self,
        policy: EndpointPolicy | Outbound,
        resolve: Resolver | None = None,
        pg_dump: str | None = None,
    ) -> None:
        self._outbound = outbound_for(policy, resolve)
        self._pg_dump = pg_dump

    async def _unreached(self, started: float) -> SourceError:
        """The stage's one failure, once the budget's floor has passed."""
        await asyncio.sleep(self._outbound.until_floor(started))
        return SourceError(Stage.SOURCE.message)

    def read(self, source: PostgresSource, credentials: Mapping[str, str]) -> AsyncIterator[bytes]:
        """The custom-format dump of ``source.database``."""
        return self._dump(source, dict(credentials))

    async def _dump(
        self, source: PostgresSource, credentials: dict[str, str]
    ) -> AsyncIterator[bytes]:
        program = self._pg_dump or shutil.which("pg_dump")
        if program is None:
            raise SourceError("source postgres: pg_dump is not installed on this executor")
        started = time.monotonic()
        try:
            addresses = await asyncio.to_thread(self._outbound.addresses, source.host, source.port)
        except UnreachableError:
            raise await self._unreached(started) from None
        password = credentials["password"]
        conninfo = " ".join(
            f"{name}={_quote(value)}"
            for name, value in (
                ("host", source.host),
                ("hostaddr", addresses[0]),
                ("port", str(source.port)),
                ("dbname", source.database),
                ("user", credentials["username"]),
                ("connect_timeout", str(self._outbound.budget.libpq_timeout)),
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
        reached = False
        try:
            while chunk := await process.stdout.read(CHUNK):
                reached = True
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
            logger.info("a postgres source failed: pg_dump exited with %d", code)
            if not reached:
                raise await self._unreached(started)
            raise SourceError(Stage.SOURCE_READ.message)
