"""The PostgreSQL adapter (psycopg 3 and psycopg-pool, asynchronous): production.

    database = PostgresDatabase.from_url("postgresql://...")  # nothing is connected yet
    database.migrate()            # apply pending migrations (safe with several instances)
    await database.open()         # in the app's lifespan: start connecting (optional)
    uow_factory = database.uow    # a UnitOfWorkFactory: ``async with uow_factory() as uow``
    await database.aclose()       # or ``database.close()`` from synchronous code

An embedder passes its own ``AsyncConnectionPool``, ``PostgresDatabase(pool)``, and keeps
opening and closing it: Strongroom never closes a pool it did not create.

An async pool belongs to the event loop it was opened on, and one database may be used
from several loops (a server's, the private loop of a blocking facade, a test client's).
Each loop gets a pool of its own (``pool_of_this_loop``): the given pool on the loop it
serves, elsewhere a pool the database creates, with the same settings, on first use, and
closes when the database is closed or the loop ends. ``migrate`` and ``connection`` use a
plain synchronous connection of their own (start-up, tests).

Connections run in autocommit: a unit of work's reads before its first write or lock cost
one round trip each, and the first statement that writes or locks sends ``BEGIN`` with it
in one pipeline (see ``repositories``). ``get(..., for_update=True)`` is ``SELECT ... FOR
NO KEY UPDATE``.

Faults: nothing waits without bound. Taking a connection waits at most the pool's timeout,
connecting at most ``connect_timeout``, and every statement at most ``statement_timeout``,
enforced by the server (``statement_timeout``, on pools made by ``create_pool``) and by the
client: a statement that outlives its deadline has its connection's socket shut, which
also covers a paused server or a silent network, and the connection is discarded. Each
gives ``UpstreamUnavailableError``. A connection found dead before the unit of work wrote
anything (the server restarted) is replaced and the statement retried, so a restart costs
no request an error.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from functools import partial
from types import TracebackType
from typing import Any, Self
from uuid import UUID

import attrs
import orjson
import psycopg
from psycopg.adapt import AdaptersMap
from psycopg.types.array import ListBinaryDumper
from psycopg.types.json import Json, set_json_dumps, set_json_loads
from psycopg_pool import AsyncConnectionPool, PoolClosed

from strongroom.adapters.sql import postgres_transaction
from strongroom.adapters.sql.catalog import Dialect, queries_for
from strongroom.adapters.sql.migrate import (
    VERSION_TABLE,
    Migration,
    migrations_for,
    run_migrations,
)
from strongroom.adapters.sql.postgres_group_commit import (
    GroupCommit,
)
from strongroom.adapters.sql.postgres_transaction import PostgresTransaction
from strongroom.adapters.sql.unit_of_work import OneUnitPerTask, SqlUnitOfWork

# pg_advisory_xact_lock key of the migrator ("strongroom" in ASCII, truncated to 63 bits).
MIGRATION_LOCK_KEY = 0x7374726F6E67726F
# Extra time the client gives a statement beyond the server's statement_timeout, so that
# the server's clean cancellation normally comes first and the connection stays usable.
_CLIENT_GRACE = 1.0
# How long a synchronous ``close`` waits for another thread's loop to close its pool.
_CLOSE_WAIT = 10.0

_CREATE_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
_VERSION_TABLE_EXISTS = "SELECT to_regclass(%s) IS NOT NULL"
_APPLIED_VERSIONS = "SELECT version FROM schema_migrations"
_IS_APPLIED = "SELECT 1 FROM schema_migrations WHERE version = %s"
_RECORD_VERSION = "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)"
_TAKE_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(%s)"
_NO_STATEMENT_TIMEOUT = "SET LOCAL statement_timeout = 0"


def default_max_size() -> int:
    """Pool size for this machine: four connections per CPU, between 4 and 32."""
    return max(4, min(32, 4 * (os.cpu_count() or 1)))


def _json_dumps(value: object) -> bytes:
    """A JSON parameter's text by orjson (compact; json.dumps took ten times longer, and a
    create writes two); what orjson refuses (an integer beyond 64 bits, a key that is not
    a string, a lone surrogate) as json.dumps writes it, as before."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


# The adapters of Strongroom's connections: psycopg's, with JSON columns parsed by orjson
# (a page of 50 backups parses a few hundred JSON values; json.loads took 7 times longer)
# and written by it.
ADAPTERS = AdaptersMap(psycopg.adapters)
set_json_loads(orjson.loads, ADAPTERS)
set_json_dumps(_json_dumps, ADAPTERS)


class Column(list[object]):
    """One column of the rows a statement writes together (``Codec.array``), sent in the
    binary format: a text array quotes and escapes every value in Python (five times
    slower for an event's columns); the statement casts it to the column's array type."""


ADAPTERS.register_dumper(Column, ListBinaryDumper)


CLIENT_CHECK_MS = 100
"""How often the server checks, while a statement runs, that its client is still there
(PostgreSQL 14 and later): a statement committed on its own (``write_alone``) whose client
went away stops instead of committing unseen."""


def create_pool(
    conninfo: str,
    *,
    min_size: int = 1,
    max_size: int | None = None,
    timeout: float = 5.0,
    connect_timeout: int = 5,
    statement_timeout: float = 10.0,
    idle_in_transaction_timeout: float = 60.0,
    name: str = "strongroom",
) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
    """A closed async pool configured for Strongroom: autocommit, UTC, bounded waits.

    ``timeout`` bounds the wait for a connection and the pool's attempts to reconnect,
    ``connect_timeout`` (whole seconds, at least 2) each connection attempt,
    ``statement_timeout`` each statement (server side).
    """
    options = (
        "-c TimeZone=UTC"
        f" -c statement_timeout={round(statement_timeout * 1000)}"
        f" -c idle_in_transaction_session_timeout={round(idle_in_transaction_timeout * 1000)}"
        f" -c client_connection_check_interval={CLIENT_CHECK_MS}"
    )
    return AsyncConnectionPool(
        conninfo,
        open=False,
        min_size=min_size,
        max_size=max_size or default_max_size(),
        timeout=timeout,
        # Give up a failing reconnection quickly: the next request starts a fresh attempt,
        # so the service recovers as soon as the database returns, whatever the outage's
        # length (the default backs off for up to 300 s).
        reconnect_timeout=timeout,
        name=name,
        kwargs={
            "autocommit": True,
            "context": ADAPTERS,
            "connect_timeout": max(2, connect_timeout),
            "application_name": name,
            "options": options,
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        },
    )


class PostgresCodec:
    """Values as psycopg takes and gives them: native uuids and instants, ``Json``."""

    def uuid(self, value: UUID) -> object:
        """As is (``uuid``)."""
        return value

    def timestamp(self, value: datetime) -> object:
        """As is (``timestamptz``); naive datetimes are refused."""
        if value.tzinfo is None:
            raise ValueError("naive datetimes are refused: give instants in UTC")
        return value

    def json(self, value: object) -> object:
        """``Json`` keeps the text as written (``jsonb`` columns normalise it)."""
        return Json(value)

    def text_list(self, value: Sequence[str]) -> object:
        """A list (``text[]``)."""
        return list(value)

    def array(self, value: Sequence[object]) -> object:
        """A ``Column`` (cast to its column's array type by the statement)."""
        return Column(value)

    def read_uuid(self, value: Any) -> UUID:
        """As given."""
        uuid: UUID = value
        return uuid

    def read_timestamp(self, value: Any) -> datetime:
        """In UTC, whatever the connection's time zone."""
        instant: datetime = value
        return instant if instant.tzinfo is UTC else instant.astimezone(UTC)

    def read_json(self, value: Any) -> Any:
        """As given (psycopg parses JSON)."""
        return value

    def read_text_list(self, value: Any) -> list[str]:
        """As given."""
        return list(value)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _loop_of(pool: AsyncConnectionPool[Any]) -> asyncio.AbstractEventLoop | None:
    """The loop an open pool runs its workers on (``None`` for a pool never opened)."""
    # psycopg_pool does not say which loop a pool belongs to; its scheduler task does.
    runner = getattr(pool, "_sched_runner", None)
    return runner.get_loop() if isinstance(runner, asyncio.Task) else None


def _like(pool: AsyncConnectionPool[Any]) -> AsyncConnectionPool[Any]:
    """A new closed pool with the settings of ``pool``, for another event loop."""
    return AsyncConnectionPool(
        pool.conninfo,
        connection_class=pool.connection_class,
        kwargs=pool.kwargs,
        min_size=pool.min_size,
        max_size=pool.max_size,
        open=False,
        configure=pool._configure,
        check=pool._check,
        reset=pool._reset,
        name=pool.name,
        timeout=pool.timeout,
        max_waiting=pool.max_waiting,
        max_lifetime=pool.max_lifetime,
        max_idle=pool.max_idle,
        reconnect_timeout=pool.reconnect_timeout,
        num_workers=pool.num_workers,
    )


@attrs.define
class _LoopPool:
    """The pool of one event loop; ``keeper`` closes an owned pool when it is cancelled
    (by ``close`` or by the loop's own end)."""

    pool: AsyncConnectionPool[Any]
    owned: bool
    group_commit: GroupCommit
    keeper: asyncio.Task[None] | None = None
    opened: bool = False


async def _stop(keeper: asyncio.Task[None]) -> None:
    """Cancel a keeper and wait until it has closed its pool."""
    keeper.cancel()
    await asyncio.wait([keeper])


class PostgresDatabase:
    """One PostgreSQL database: a factory of units of work, and its migrations."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        *,
        statement_timeout: float = 10.0,
        owns_pool: bool = False,
    ) -> None:
        """Use ``pool`` (opened and closed by its owner unless ``owns_pool``).

        ``statement_timeout`` is the client's bound on each statement; a statement is cut
        ``_CLIENT_GRACE`` later than that, so a server-side timeout normally comes first.
        """
        self.pool = pool
        self.owns_pool = owns_pool
        self.statement_deadline = statement_timeout + _CLIENT_GRACE
        self.queries = queries_for(Dialect.POSTGRES)
        self.codec = PostgresCodec()
        self._guard = OneUnitPerTask()
        self._pools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._given_pool_taken = False
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def from_url(
        cls, conninfo: str, *, statement_timeout: float = 10.0, **pool_options: Any
    ) -> PostgresDatabase:
        """A database with pools of its own (``create_pool``), connecting on first use."""
        pool = create_pool(conninfo, statement_timeout=statement_timeout, **pool_options)
        return cls(pool, statement_timeout=statement_timeout, owns_pool=True)

    def opened_pool_of_this_loop(self) -> AsyncConnectionPool[Any] | None:
        """The running event loop's pool once it is open, else ``None``: the usual case,
        without the lock and without a coroutine (``pool_of_this_loop`` opens it)."""
        entry = self._pools.get(asyncio.get_running_loop())
        return entry.pool if entry is not None and entry.opened else None

    async def pool_of_this_loop(self) -> AsyncConnectionPool[Any]:
        """The running event loop's pool, created (and opened, if it is the database's)
        on the loop's first use."""
        pool = self.opened_pool_of_this_loop()
        if pool is not None:
            return pool
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._pools.get(loop)
            if entry is None:
                entry = self._pools[loop] = self._new_entry(loop)
        if not entry.opened:
            if entry.owned:
                await entry.pool.open()
            entry.opened = True
        return entry.pool

    async def group_commit_of_this_loop(self) -> GroupCommit:
        """The running event loop's group commit (of its pool's connections)."""
        await self.pool_of_this_loop()
        return self._pools[asyncio.get_running_loop()].group_commit

    def _new_entry(self, loop: asyncio.AbstractEventLoop) -> _LoopPool:
        if self._closed:
            raise PoolClosed("this PostgresDatabase is closed")
        serves = _loop_of(self.pool)
        group_commit = GroupCommit(
            partial(postgres_transaction.run_batch, self), postgres_transaction.workspace_of
        )
        if not self._given_pool_taken and serves in (None, loop):
            self._given_pool_taken = True
            entry = _LoopPool(self.pool, self.owns_pool, group_commit)
        else:
            entry = _LoopPool(_like(self.pool), True, group_commit)
        if entry.owned:
            entry.keeper = loop.create_task(
                self._keep(loop, entry), name="strongroom-postgres-pool-keeper"
            )
        return entry

    async def _keep(self, loop: asyncio.AbstractEventLoop, entry: _LoopPool) -> None:
        """Wait until cancelled, then close the pool: ``asyncio.run`` cancels every task of
        a loop that ends, so no pool outlives its loop with connections open."""
        try:
            await loop.create_future()
        finally:
            try:
                await entry.pool.close()
            finally:
                with self._lock:
                    if self._pools.get(loop) is entry:
                        del self._pools[loop]

    async def open(self, *, wait: bool = False, timeout: float = 30.0) -> None:
        """Open the running loop's pool (a lent pool is its owner's to open).

        With ``wait``, wait until ``min_size`` connections are up or ``timeout`` passes.
        Without, a database that is down does not stop the app from starting. The pools
        of other loops open on their first use.
        """
        pool = await self.pool_of_this_loop()
        if wait:
            await pool.wait(timeout=timeout)

    def _keepers(self) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]]:
        """Refuse new pools; the keepers of the pools to close."""
        with self._lock:
            self._closed = True
            return [
                (loop, entry.keeper)
                for loop, entry in self._pools.items()
                if entry.keeper is not None and not loop.is_closed()
            ]

    async def aclose(self) -> None:
        """Close every pool this database created; a lent pool stays open. Final."""
        running = asyncio.get_running_loop()
        for loop, keeper in self._keepers():
            if loop is running:
                await _stop(keeper)
            elif loop.is_running():
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_stop(keeper), loop))
            else:  # a stopped loop, not closed: run it once more to close its pool
                await asyncio.to_thread(loop.run_until_complete, _stop(keeper))

    def close(self) -> None:
        """``aclose`` for synchronous code (shutdown). Waits for pools of loops that run in
        other threads; the pool of a loop running in this thread closes as soon as the
        loop gets to it."""
        running = _running_loop()
        for loop, keeper in self._keepers():
            if loop is running:
                keeper.cancel()
            elif loop.is_running():
                future = asyncio.run_coroutine_threadsafe(_stop(keeper), loop)
                with suppress(FutureTimeoutError):
                    future.result(timeout=_CLOSE_WAIT)
            else:
                loop.run_until_complete(_stop(keeper))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def uow(self) -> SqlUnitOfWork:
        """A new unit of work (this bound method is a ``UnitOfWorkFactory``)."""
        return SqlUnitOfWork(self._transaction, self._guard)

    def _transaction(self) -> PostgresTransaction:
        return PostgresTransaction(self)

    def migrate(self) -> list[Migration]:
        """Apply every pending migration; the ones this call applied."""
        with self.connection() as connection:
            target = _PostgresMigrationTarget(connection)
            return run_migrations(target, migrations_for(Dialect.POSTGRES))

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A synchronous connection in autocommit mode with the pool's settings, closed
        afterwards (for start-up and tests; units of work use the pools)."""
        conninfo, kwargs = self.pool.conninfo, self.pool.kwargs or {}
        if not isinstance(conninfo, str) or not isinstance(kwargs, dict):
            raise TypeError("a pool with computed connection parameters cannot migrate")
        with psycopg.connect(conninfo, **{**kwargs, "autocommit": True}) as connection:
            yield connection


class _PostgresMigrationTarget:
    """Applies migrations on one autocommit connection, each in a transaction holding the
    migrator's advisory lock."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def applied_versions(self) -> set[int]:
        row = self._connection.execute(_VERSION_TABLE_EXISTS, (VERSION_TABLE,)).fetchone()
        if row is None or not row[0]:
            return set()
        return {version for (version,) in self._connection.execute(_APPLIED_VERSIONS)}

    def apply_if_pending(self, migration: Migration) -> bool:
        connection = self._connection
        with connection.transaction():
            connection.execute(_NO_STATEMENT_TIMEOUT)
            connection.execute(_TAKE_MIGRATION_LOCK, (MIGRATION_LOCK_KEY,))
            connection.execute(_CREATE_VERSION_TABLE)
            if connection.execute(_IS_APPLIED, (migration.version,)).fetchone() is not None:
                return False
            connection.execute(migration.sql.encode())
            connection.execute(_RECORD_VERSION, (migration.version, migration.name))
        return True
