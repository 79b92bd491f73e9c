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

With psycopg installed (the ``postgres`` extra), the reader first opens a read-only
repeatable-read transaction on the source, exports its snapshot and has ``pg_dump`` dump
that very snapshot (``--snapshot``); once the dump ended it reads every table's rows and
checksum in the same snapshot (``pg_tables``), so what the stream's ``manifest`` holds is
exactly what the dump holds: restore drills check a restored copy against it. A source
that cannot give a manifest (no psycopg, a standby that exports no snapshot) is dumped
all the same, without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from strongroom.adapters.outbound.policy import Outbound, Stage, UnreachableError, outbound_for
from strongroom.adapters.resolver import Resolver
from strongroom.domain.backups import PostgresSource
from strongroom.domain.drills import TableFacts
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024
STDERR_KEPT = 16 * 1024


def _quote(value: str) -> str:
    """A libpq connection-string value, quoted."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class DumpStream:
    """A dump's bytes; once read to the end, ``manifest`` holds its tables' facts (None
    when none could be recorded)."""

    def __init__(self) -> None:
        self.manifest: dict[str, TableFacts] | None = None
        self._inner: AsyncGenerator[bytes] | None = None

    def __aiter__(self) -> DumpStream:
        return self

    async def __anext__(self) -> bytes:
        assert self._inner is not None
        return await self._inner.__anext__()

    async def aclose(self) -> None:
        """Stop the dump (kills ``pg_dump``)."""
        if self._inner is not None:
            await self._inner.aclose()


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

    def read(self, source: PostgresSource, credentials: Mapping[str, str]) -> DumpStream:
        """The custom-format dump of ``source.database`` (a ``DumpStream``)."""
        stream = DumpStream()
        stream._inner = self._dump(source, dict(credentials), stream)
        return stream

    async def _snapshot(self, conninfo: str, password: str) -> tuple[Any, str | None]:
        """A transaction holding the snapshot to dump, and the snapshot's name; (None,
        None) when there is none (no psycopg, no connection: ``pg_dump`` then says)."""
        try:
            import psycopg  # noqa: PLC0415 (the ``postgres`` extra)
        except ImportError:
            return None, None
        try:
            connection = await psycopg.AsyncConnection.connect(
                conninfo, password=password, passfile=os.devnull
            )
        except psycopg.Error:
            return None, None
        try:
            await connection.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
            await connection.set_read_only(True)
            found = await (await connection.execute("SELECT pg_export_snapshot()")).fetchone()
            return connection, str(found[0]) if found else None
        except Exception:  # the dump goes on without a manifest: never fail it for this
            logger.info("a postgres source exports no snapshot: dumped without a manifest")
            await connection.close()
            return None, None

    async def _manifest(self, connection: Any) -> dict[str, TableFacts] | None:
        from strongroom.adapters.sources.pg_tables import read_tables_async  # noqa: PLC0415

        try:
            return await read_tables_async(connection)
        except Exception:
            logger.warning("a postgres source's tables could not be recorded", exc_info=True)
            return None

    async def _dump(
        self, source: PostgresSource, credentials: dict[str, str], stream: DumpStream
    ) -> AsyncGenerator[bytes]:
        program = self._pg_dump or shutil.which("pg_dump")
        if program is None:
            raise SourceError("source postgres: pg_dump is not installed on this executor")
        started = time.monotonic()
        try:
            addresses = await asyncio.to_thread(self._outbound.addresses, source.host, source.port)
        except UnreachableError:
            raise await self._unreached(started) from None
        password = credentials["password"]
        base = " ".join(
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
        held, snapshot = await self._snapshot(base, password)
        try:
            async for chunk in self._run_dump(program, base, password, snapshot, started):
                yield chunk
            if held is not None and snapshot is not None:
                stream.manifest = await self._manifest(held)
        finally:
            if held is not None:
                await held.close()

    async def _run_dump(
        self, program: str, conninfo: str, password: str, snapshot: str | None, started: float
    ) -> AsyncGenerator[bytes]:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "PGPASSWORD": password,
            "PGPASSFILE": os.devnull,
        }
        snapshot_argv = [f"--snapshot={snapshot}"] if snapshot else []
        process = await asyncio.create_subprocess_exec(
            program,
            "--format=custom",
            "--no-password",
            *snapshot_argv,
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
