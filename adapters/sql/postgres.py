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
import os
import socket
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
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Json, set_json_loads
from psycopg_pool import AsyncConnectionPool, PoolClosed

from strongroom.adapters.sql.catalog import Dialect, Q, queries_for
from strongroom.adapters.sql.errors import DATABASE_UNAVAILABLE, refusal
from strongroom.adapters.sql.migrate import (
    VERSION_TABLE,
    Migration,
    migrations_for,
    run_migrations,
)
from strongroom.adapters.sql.postgres_group_commit import (
    FailWaiting,
    GroupCommit,
    RunAlone,
    Statement,
)
from strongroom.adapters.sql.repositories import Fetch, Step
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.adapters.sql.unit_of_work import OneUnitPerTask, SqlUnitOfWork
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.ports.driven.statistics import PoolUse

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


def translate(error: psycopg.Error, params: Params) -> Exception:
    """The port-level error for a psycopg error (the one place this adapter does so).

    Constraint violations become refusals (by constraint name) or
    ``IntegrityViolationError``; anything operational (no connection, connection lost,
    pool exhausted, statement cancelled by a timeout, deadlock, server shutting down)
    becomes ``UpstreamUnavailableError``; programming errors stay what they are.
    """
    if isinstance(error, psycopg.IntegrityError):
        detail = error.diag.message_primary or str(error)
        return refusal(error.diag.constraint_name, params, detail)
    if isinstance(error, psycopg.OperationalError):
        return UpstreamUnavailableError(DATABASE_UNAVAILABLE)
    return error


def default_max_size() -> int:
    """Pool size for this machine: four connections per CPU, between 4 and 32."""
    return max(4, min(32, 4 * (os.cpu_count() or 1)))


# The adapters of Strongroom's connections: psycopg's, with JSON columns parsed by orjson
# (a page of 50 backups parses a few hundred JSON values; json.loads took 7 times longer).
ADAPTERS = AdaptersMap(psycopg.adapters)
set_json_loads(orjson.loads, ADAPTERS)


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


def _shut(fileno: int) -> None:
    """Shut a socket without closing its descriptor (the event loop still watches it): the
    statement waiting on it fails at once instead of hanging on a silent server."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: the statement fails or has finished anyway


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
        group_commit = GroupCommit(partial(_run_batch, self), _workspace_of)
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


async def _give_back(
    pool: AsyncConnectionPool[Any], connection: psycopg.AsyncConnection[Any], autocommit: bool
) -> None:
    """Return a connection as it was lent (a broken one is discarded by the pool)."""
    if not autocommit and not connection.broken and not connection.closed:
        with suppress(psycopg.Error):  # if it fails, the pool resets or discards it
            await connection.set_autocommit(False)
    await pool.putconn(connection)


RETRY_LOCK_TIMEOUT = b"SET LOCAL lock_timeout = '1s'"
"""How long a retried pipeline waits for a lock (see ``PostgresTransaction.write_all``)."""


def _may_prepare(step: int) -> bool | None:
    """Whether a pipeline's ``step`` (from 0) may be prepared: only the first (``None``:
    psycopg's choice, by its ``prepare_threshold``).

    A later step is aborted unrun when an earlier one fails (a refusal such as
    ``name_taken``), its ``PREPARE`` with it, and psycopg 3.3 records a statement as
    prepared when it queues the ``PREPARE``, not when the server answers it: every later
    execution of that statement on the connection, whoever borrows it next, would fail
    with ``prepared statement "_pg3_N" does not exist``. BEGIN, and the lock timeout of a
    retry, run before the first step and do not fail.
    """
    return None if step == 0 else False


def _may_spoil_prepared(error: psycopg.Error) -> bool:
    """Whether a pipeline's ``error`` may have come from a ``PREPARE`` that psycopg 3.3
    nevertheless records as done (see ``_may_prepare``): anything but a refusal by a
    constraint, which fails a statement's execution, after its ``PREPARE``. The connection
    is then discarded; such errors (a lock or statement timeout, a deadlock) are rare.
    """
    return not isinstance(error, psycopg.IntegrityError)


class _Deadline:
    """Shut the connection's socket if the block outlives ``seconds``; ``cut`` says
    whether it did.

    Not ``asyncio.timeout``: psycopg answers the cancellation of a running statement by
    asking the server to cancel it and waiting for that, up to 10 s more, which a paused
    server never answers. A shut socket fails the statement at once. A class, not a
    generator-based context manager: every statement enters one.
    """

    __slots__ = ("_fileno", "_timer", "cut")

    def __init__(self, connection: psycopg.AsyncConnection[Any], seconds: float) -> None:
        self.cut = False
        self._fileno = connection.fileno()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._shut)

    def _shut(self) -> None:
        self.cut = True
        _shut(self._fileno)

    def __enter__(self) -> _Deadline:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()


class PostgresTransaction:
    """The statements of one unit of work on one pooled connection of its loop's pool."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database
        self._queries = database.queries
        self.codec: Codec = database.codec
        self._pool: AsyncConnectionPool[Any] | None = None
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._was_autocommit = True
        self._writing = False
        self._retries = 0

    async def _take_connection(self) -> psycopg.AsyncConnection[Any]:
        if self._connection is None:
            pool = self._database.opened_pool_of_this_loop()
            if pool is None:
                pool = await self._database.pool_of_this_loop()
            self._pool = pool
            connection = await pool.getconn()
            self._was_autocommit = connection.autocommit
            if not self._was_autocommit:
                try:
                    await connection.set_autocommit(True)
                except BaseException:
                    await _give_back(pool, connection, self._was_autocommit)
                    raise
            self._connection = connection
        return self._connection

    async def _give_back(self) -> None:
        connection, self._connection = self._connection, None
        self._writing = False
        if connection is not None:
            assert self._pool is not None
            await _give_back(self._pool, connection, self._was_autocommit)

    async def _run(
        self, query: Q, params: Params, filters: Sequence[Q], writes: bool, fetch: Fetch
    ) -> Any:
        text = self._queries.text(query, filters, lock=writes).encode()
        while True:
            began_writing = self._writing
            deadline: _Deadline | None = None
            try:
                connection = await self._take_connection()
                with _Deadline(connection, self._database.statement_deadline) as deadline:
                    async with connection.cursor(row_factory=dict_row) as cursor:
                        if writes and not self._writing:
                            await self._begin_with(connection, cursor, text, params)
                        else:
                            await cursor.execute(text, params)
                        return await _result(cursor, fetch)
            except psycopg.Error as error:
                if await self._may_retry(error, began_writing, deadline):
                    continue
                pipelined = writes and not began_writing  # ``_begin_with``
                if (deadline is not None and deadline.cut) or (
                    pipelined and _may_spoil_prepared(error)
                ):
                    await self._discard()
                raise translate(error, params) from error

    async def _begin_with(
        self,
        connection: psycopg.AsyncConnection[Any],
        cursor: psycopg.AsyncCursor[DictRow],
        text: bytes,
        params: Params,
    ) -> None:
        """``BEGIN`` and the unit's first write or lock, in one round trip."""
        try:
            async with connection.pipeline():
                await connection.execute(b"BEGIN")
                await cursor.execute(text, params)
        finally:
            # Open (or aborted) if BEGIN went through, whatever the statement did.
            self._writing = connection.info.transaction_status != TransactionStatus.IDLE

    async def _may_retry(
        self, error: psycopg.Error, began_writing: bool, deadline: _Deadline | None
    ) -> bool:
        """Retry on another connection when this one was found dead before the unit wrote
        anything: nothing is lost, and a restarted server costs no request. Each pooled
        connection may have died with the server, so up to the pool's size of them."""
        connection = self._connection
        if (
            self._pool is None
            or self._retries >= self._pool.max_size
            or began_writing
            or connection is None
            or not isinstance(error, psycopg.OperationalError)
            or not (connection.broken or connection.closed)
            or (deadline is not None and deadline.cut)
        ):
            return False
        self._retries += 1
        await self._give_back()  # the pool discards it
        return True

    async def _discard(self) -> None:
        """Close a connection whose statement was cut, so that the pool replaces it."""
        if self._connection is not None:
            with suppress(psycopg.Error):
                await self._connection.close()

    async def fetch_one(
        self, query: Q, params: Params, *, filters: Sequence[Q] = (), writes: bool = False
    ) -> Row | None:
        """The first row of ``query``."""
        found: Row | None = await self._run(query, params, filters, writes, "one")
        return found

    async def fetch_alone(
        self, query: Q, params: Params, *, filters: Sequence[Q] = ()
    ) -> Row | None:
        """``fetch_one`` of a read that is the unit's last statement: a connection taken
        for it goes back to the pool as soon as the row is read, not when the unit ends."""
        taken = self._connection is None
        try:
            found: Row | None = await self._run(query, params, filters, False, "one")
        finally:
            if taken and not self._writing:
                await self._give_back()
        return found

    async def fetch_all(self, query: Q, params: Params, *, filters: Sequence[Q] = ()) -> list[Row]:
        """Every row of a read."""
        found: list[Row] = await self._run(query, params, filters, False, "all")
        return found

    async def execute(self, query: Q, params: Params) -> int:
        """Run a write inside the transaction; the number of rows it changed."""
        changed: int = await self._run(query, params, (), True, "count")
        return changed

    async def write_all(self, steps: Sequence[Step], *, commit: bool = False) -> list[Any]:
        """``BEGIN`` (unless the unit already wrote) and ``steps`` in one pipeline: one round
        trip (with ``commit``, ending in ``COMMIT``).

        Retried on another connection when this one was found dead before the server
        answered any step (a restarted server costs no request). The retry waits for locks
        at most ``RETRY_LOCK_TIMEOUT``: if the dead connection's server session did run a
        step, it may hold that step's locks until it notices the loss, and the retry must
        not wait for it as long as the statement deadline.
        """
        texts = [(self._queries.text(query, ()).encode(), params) for query, params, _ in steps]
        retried = False
        while True:
            began_writing = self._writing
            deadline: _Deadline | None = None
            cursors: list[psycopg.AsyncCursor[DictRow]] = []
            try:
                connection = await self._take_connection()
                with _Deadline(connection, self._database.statement_deadline) as deadline:
                    try:
                        async with connection.pipeline():
                            if not self._writing:
                                await connection.execute(b"BEGIN")
                                if retried:
                                    await connection.execute(RETRY_LOCK_TIMEOUT)
                            for index, (text, params) in enumerate(texts):
                                cursor = connection.cursor(row_factory=dict_row)
                                await cursor.execute(text, params, prepare=_may_prepare(index))
                                cursors.append(cursor)
                            if commit:
                                # Behind statements that may fail: unprepared (``_may_prepare``).
                                await connection.execute(b"COMMIT", prepare=False)
                    finally:
                        # Open if BEGIN went through (aborted if a step failed).
                        status = connection.info.transaction_status
                        self._writing = status != TransactionStatus.IDLE
                    return [
                        await _result(cursor, fetch)
                        for cursor, (_, _, fetch) in zip(cursors, steps, strict=True)
                    ]
            except psycopg.Error as error:
                unanswered = all(cursor.pgresult is None for cursor in cursors)
                if unanswered and await self._may_retry(error, began_writing, deadline):
                    retried = True
                    continue
                if (deadline is not None and deadline.cut) or _may_spoil_prepared(error):
                    await self._discard()
                # Which step failed is not known here: every step's parameters, the
                # first's winning, name the refusal (constraint names tell them apart).
                merged = {k: v for _, params in reversed(texts) for k, v in params.items()}
                raise translate(error, merged) from error

    async def write_alone(self, query: Q, params: Params) -> Row | None:
        """``query``, one statement, committed before it answers: one round trip. Run in
        the next batch of this loop's group commit (``postgres_group_commit``), which
        commits concurrent ones together and runs a lone one in autocommit."""
        if self._writing:
            raise RuntimeError("write_alone is a transaction of its own: none may be open")
        text = self._queries.text(query).encode()
        group_commit = await self._database.group_commit_of_this_loop()
        return await group_commit.run(
            (text, params), lambda retry: self._write_alone_now(text, params, retry)
        )

    async def _write_alone_now(self, text: bytes, params: Params, retried: bool) -> Row | None:
        """``text``, one statement, in autocommit on this unit's connection: committed
        when it answers, one round trip (its batch failed as a whole; ``retried``: its
        batch's connection was lost, so this is a retry).

        Retried on another connection when this one was found dead before the server
        answered (a restarted server costs no request). The earlier attempt may still be
        running on the server, or have committed: the statement must do nothing twice and
        say so (``backup_create_in_session`` inserts ``ON CONFLICT (id) DO NOTHING``). The
        retry waits for locks at most ``RETRY_LOCK_TIMEOUT`` (as ``write_all``'s), in a
        transaction of its own sent with its ``COMMIT``: still one round trip. The server
        drops a statement whose client has gone within ``CLIENT_CHECK_MS``
        (``client_connection_check_interval``), so an attempt cut while it waits for a
        lock does not commit once the lock is free.
        """
        while True:
            deadline: _Deadline | None = None
            cursor: psycopg.AsyncCursor[DictRow] | None = None
            try:
                connection = await self._take_connection()
                with _Deadline(connection, self._database.statement_deadline) as deadline:
                    cursor = connection.cursor(row_factory=dict_row)
                    if not retried:
                        await cursor.execute(text, params)
                    else:
                        try:
                            async with connection.pipeline():
                                await connection.execute(b"BEGIN")
                                await connection.execute(RETRY_LOCK_TIMEOUT)
                                await cursor.execute(text, params)
                                # Behind a statement that may fail: unprepared (``_may_prepare``).
                                await connection.execute(b"COMMIT", prepare=False)
                        finally:
                            status = connection.info.transaction_status
                            self._writing = status != TransactionStatus.IDLE
                    found: Row | None = await cursor.fetchone()
                    return found
            except psycopg.Error as error:
                unanswered = cursor is None or cursor.pgresult is None
                if unanswered and await self._may_retry(error, False, deadline):
                    retried = True
                    continue
                if (deadline is not None and deadline.cut) or (
                    retried and _may_spoil_prepared(error)
                ):
                    await self._discard()
                raise translate(error, params) from error

    async def commit(self, steps: Sequence[Step] = ()) -> None:
        """Commit the transaction, if one is open; ``steps`` (writes) first, sent in the
        same round trip as the ``COMMIT``."""
        if steps:
            await self.write_all(steps, commit=True)
            return
        if self._connection is None or not self._writing:
            return
        await self._end(b"COMMIT")

    async def _end(self, command: bytes) -> None:
        connection = self._connection
        assert connection is not None
        deadline: _Deadline | None = None
        try:
            with _Deadline(connection, self._database.statement_deadline) as deadline:
                await connection.execute(command)
        except psycopg.Error as error:
            if deadline is not None and deadline.cut:
                await self._discard()
            raise translate(error, {}) from error
        finally:
            self._writing = False

    async def ping(self) -> None:
        """``SELECT 1``."""
        await self.fetch_one(Q.PING, {})

    async def pool_use(self) -> PoolUse | None:
        """The connections of this loop's pool: lent out, idle, and requests waiting."""
        stats = (await self._database.pool_of_this_loop()).get_stats()
        size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
        return PoolUse(
            in_use=size - idle,
            idle=idle,
            waiting=stats.get("requests_waiting", 0),
            max_size=stats.get("pool_max", 0),
        )

    async def close(self) -> None:
        """Roll back what was not committed; give the connection back."""
        if self._connection is None:
            return
        try:
            connection = self._connection
            if self._writing and not (connection.broken or connection.closed):
                await self._end(b"ROLLBACK")
        except UpstreamUnavailableError:
            pass  # the connection is gone, and its transaction with it
        finally:
            await self._give_back()


def _workspace_of(statement: Statement) -> str:
    """The workspace whose row a ``write_alone`` statement (a backup's create in a session)
    locks."""
    return str(statement[1]["workspace_id"])


async def _run_batch(
    database: PostgresDatabase, statements: Sequence[Statement]
) -> list[Row | None]:
    """The runner of ``postgres_group_commit``: ``statements`` on one connection of this
    loop's pool, a lone one in autocommit, several between ``BEGIN`` and ``COMMIT`` in one
    pipeline; the first row of each.

    A lone statement's error is its answer, as ``write_alone``'s, except a connection lost
    before the server answered: ``RunAlone`` retries it. A batch's error rolls back all of
    it: ``RunAlone``, so that each statement answers for itself. No connection to be had,
    or no answer by the deadline: ``FailWaiting`` with ``UpstreamUnavailableError``.
    """
    pool = await database.pool_of_this_loop()
    try:
        connection = await pool.getconn()
    except psycopg.Error as error:
        raise FailWaiting(UpstreamUnavailableError(DATABASE_UNAVAILABLE)) from error
    was_autocommit, keep = connection.autocommit, True
    cursors: list[psycopg.AsyncCursor[DictRow]] = []
    deadline: _Deadline | None = None
    try:
        if not was_autocommit:
            await connection.set_autocommit(True)
        with _Deadline(connection, database.statement_deadline) as deadline:
            if len(statements) == 1:
                (text, params), cursor = statements[0], connection.cursor(row_factory=dict_row)
                cursors.append(cursor)
                await cursor.execute(text, params)
            else:
                async with connection.pipeline():
                    await connection.execute(b"BEGIN")
                    for index, (text, params) in enumerate(statements):
                        cursor = connection.cursor(row_factory=dict_row)
                        cursors.append(cursor)
                        # The first step is prepared (unless the pool never prepares), so
                        # the later ones, the same text, run prepared (``_may_prepare``).
                        await cursor.execute(text, params, prepare=True if index == 0 else None)
                    await connection.execute(b"COMMIT", prepare=False)
            return [await cursor.fetchone() for cursor in cursors]
    except psycopg.Error as error:
        lone = len(statements) == 1
        if deadline is not None and deadline.cut:
            keep = False
            raise FailWaiting(UpstreamUnavailableError(DATABASE_UNAVAILABLE)) from error
        keep = lone or not _may_spoil_prepared(error)
        lost = connection.broken or connection.closed
        if not lone or (lost and all(cursor.pgresult is None for cursor in cursors)):
            raise RunAlone(after_lost_connection=lost) from error
        raise translate(error, statements[0][1]) from error
    finally:
        if keep and connection.info.transaction_status != TransactionStatus.IDLE:
            try:
                await connection.execute(b"ROLLBACK")
            except psycopg.Error:
                keep = False
        if not keep:
            with suppress(psycopg.Error):
                await connection.close()
        await _give_back(pool, connection, was_autocommit)


async def _result(cursor: psycopg.AsyncCursor[DictRow], fetch: Fetch) -> Any:
    if fetch == "one":
        return await cursor.fetchone()
    if fetch == "all":
        return await cursor.fetchall()
    return cursor.rowcount


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
