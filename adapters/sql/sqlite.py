"""The SQLite adapter (standard library ``sqlite3``): the embedded default.

    database = SqliteDatabase(data_dir / "strongroom.sqlite3")
    database.migrate()            # apply pending migrations (safe with several processes)
    uow_factory = database.uow    # a UnitOfWorkFactory: ``async with uow_factory() as uow``
    ...
    await database.aclose()      # or ``database.close()`` from synchronous code

The database runs in WAL mode (readers never wait for the writer; ``migrate`` switches the
file to it once) with foreign keys on and ``synchronous=FULL`` (a committed unit of work
survives a power cut). Connections are reused from a small idle list, one unit of work at
a time each. The path must be a file: ``:memory:`` would be one database per connection.

``sqlite3`` blocks, so no statement runs on the event loop: each is handed to a small pool
of threads owned by the database, and the coroutine waits for it. Any event loop (a
server's, a blocking facade's, a test's) may use the same database.

SQLite has no row locks. A unit of work becomes the database's one writer at its first
statement that writes or locks: it queues for ``writer`` (an ``AnyLoopLock``, so waiting
blocks no loop and no thread), then takes SQLite's write lock (``BEGIN IMMEDIATE``), and
holds both to its end. Writers are serialised, which is exactly what a locking read
(``get(..., for_update=True)``) needs. A writer that waits longer than ``busy_timeout``
seconds, in the queue or for another process's write lock, gives up with
``UpstreamUnavailableError``. A transaction of one script (``write_alone``: a session's
create) is committed together with those that arrive while it waits (``GroupCommit``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

import orjson

from strongroom.adapters.concurrency import AnyLoopLock
from strongroom.adapters.sql.catalog import Dialect, Q, queries_for
from strongroom.adapters.sql.errors import DATABASE_UNAVAILABLE, refusal
from strongroom.adapters.sql.migrate import (
    VERSION_TABLE,
    Migration,
    migrations_for,
    run_migrations,
)
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.adapters.sql.sqlite_group_commit import GroupCommit
from strongroom.adapters.sql.statements import Fetch, Step
from strongroom.adapters.sql.unit_of_work import OneUnitPerTask, SqlUnitOfWork
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.ports.driven.statistics import PoolUse

T = TypeVar("T")

# The runner's own statements (the version table is not part of the canonical schema).
_CREATE_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT
"""
_VERSION_TABLE_EXISTS = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?"
_APPLIED_VERSIONS = "SELECT version FROM schema_migrations"
_IS_APPLIED = "SELECT 1 FROM schema_migrations WHERE version = ?"
_RECORD_VERSION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"

# SQLite names the columns of a violated unique constraint, not the constraint: map back.
_UNIQUE_FAILED = re.compile(r"UNIQUE constraint failed: (?P<columns>.+)")
_UNIQUE_CONSTRAINTS = {
    "backups.workspace_id, backups.name_key": "backups_name_unique",
    "accounts.email_key": "accounts_email_unique",
    "roles.workspace_id, roles.slug": "roles_pkey",
}


def translate(error: sqlite3.Error, params: Params) -> Exception:
    """The port-level error for a ``sqlite3`` error (the one place this adapter does so).

    Constraint violations become refusals or ``IntegrityViolationError``; a database that
    is locked too long, unreadable or missing becomes ``UpstreamUnavailableError``;
    programming errors stay what they are.
    """
    if isinstance(error, sqlite3.IntegrityError):
        message = str(error)
        failed = _UNIQUE_FAILED.fullmatch(message)
        constraint = None if failed is None else _UNIQUE_CONSTRAINTS.get(failed["columns"])
        return refusal(constraint, params, message)
    if isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError:
        return UpstreamUnavailableError(DATABASE_UNAVAILABLE)
    return error


class SqliteCodec:
    """Values as SQLite stores them: uuid and instant text, JSON text."""

    def uuid(self, value: UUID) -> object:
        """Canonical lowercase text (its order is the uuid's order)."""
        return str(value)

    def timestamp(self, value: datetime) -> object:
        """Fixed-width UTC text, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (its order is time order)."""
        if value.tzinfo is None:
            raise ValueError("naive datetimes are refused: give instants in UTC")
        return value.astimezone(UTC).replace(tzinfo=None).isoformat("T", "microseconds") + "Z"

    def json(self, value: object) -> object:
        """Compact JSON text, keys in their order."""
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def text_list(self, value: Sequence[str]) -> object:
        """A JSON array."""
        return json.dumps(list(value), separators=(",", ":"), ensure_ascii=False)

    def array(self, value: Sequence[object]) -> object:
        """A JSON array (its values are this codec's text and numbers)."""
        return json.dumps(list(value), separators=(",", ":"), ensure_ascii=False)

    def read_uuid(self, value: Any) -> UUID:
        """A uuid from its text."""
        return UUID(value)

    def read_timestamp(self, value: Any) -> datetime:
        """An aware UTC instant from its text."""
        return datetime.fromisoformat(value)

    def read_json(self, value: Any) -> Any:
        """A value from JSON text (orjson: a page of backups parses hundreds of them)."""
        return orjson.loads(value)

    def read_text_list(self, value: Any) -> list[str]:
        """A list from a JSON array."""
        found: list[str] = orjson.loads(value)
        return found


class SqliteDatabase:
    """One SQLite database file: a factory of units of work, and its migrations."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        max_idle_connections: int = 64,
        threads: int = 4,
    ) -> None:
        """Nothing is opened until the first unit of work or ``migrate``.

        ``threads`` is how many statements may run at once (readers; there is one writer).
        ``max_idle_connections`` is how many connections are kept for reuse: at least as many
        as units run at once (a unit holds one from its first statement until it ends), since
        a new connection costs its PRAGMAs and every statement prepared again, and closing
        one is slower still: at 8, 16 concurrent reads closed and reopened one in twelve and
        a backup's GET cost three times the CPU.
        """
        self.path = os.fspath(path)
        if self.path == ":memory:" or self.path.startswith("file::memory:"):
            raise ValueError("an in-memory SQLite database is one per connection: give a file")
        self.busy_timeout = busy_timeout
        self._max_idle = max_idle_connections
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._executor = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="strongroom-sqlite"
        )
        # Held by the one unit of work that writes, from its BEGIN IMMEDIATE to its end.
        self.writer = AnyLoopLock()
        self._guard = OneUnitPerTask()
        # Transactions of one script (``write_alone``), committed together.
        self.group_commit = GroupCommit(self, translate)
        self.queries = queries_for(Dialect.SQLITE)
        self.codec = SqliteCodec()

    def uow(self) -> SqlUnitOfWork:
        """A new unit of work (this bound method is a ``UnitOfWorkFactory``)."""
        return SqlUnitOfWork(self._transaction, self._guard)

    def _transaction(self) -> SqliteTransaction:
        return SqliteTransaction(self)

    async def run(self, work: Callable[[], T], *, finishing: bool = False) -> T:
        """The result of ``work()``, run on one of the database's threads (never the loop).

        ``finishing`` work (giving a connection back) still runs once the database is
        closed, on the caller's thread: the threads are gone by then.
        """
        try:
            future = self.submit(work)
        except RuntimeError:
            if finishing:
                return work()
            raise
        return await asyncio.wrap_future(future)

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """``work`` queued for one of the database's threads; ``RuntimeError`` once the
        database is closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this SqliteDatabase is closed")
            return self._executor.submit(work)

    def migrate(self) -> list[Migration]:
        """Switch the file to WAL and apply every pending migration; the ones applied."""
        connection = self.connect()
        try:
            self._ensure_wal(connection)
            return run_migrations(
                _SqliteMigrationTarget(connection), migrations_for(Dialect.SQLITE)
            )
        finally:
            connection.close()

    def _ensure_wal(self, connection: sqlite3.Connection) -> None:
        """WAL is a property of the file, set once. Switching a new file can answer "locked"
        at once while another process creates it (no busy wait): retry until the timeout."""
        deadline = time.monotonic() + self.busy_timeout
        while connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                connection.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def close(self) -> None:
        """Stop the statement threads (after the statements queued) and close idle
        connections; those in use close when their unit of work ends. Blocks: from async
        code use ``aclose``."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        self._executor.shutdown(wait=True)
        for connection in idle:
            connection.close()

    async def aclose(self) -> None:
        """``close`` without blocking the event loop."""
        await asyncio.to_thread(self.close)

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
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def connect(self) -> sqlite3.Connection:
        """A new connection, configured as every unit of work's (the caller closes it)."""
        connection = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,  # the adapter issues BEGIN and COMMIT itself
            check_same_thread=False,  # used by one thread at a time, not always the same
        )
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA synchronous = FULL")
        except BaseException:
            connection.close()
            raise
        return connection

    def acquire(self) -> sqlite3.Connection:
        """An idle connection, or a new one."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this SqliteDatabase is closed")
            if self._idle:
                return self._idle.pop()
        return self.connect()

    def release(self, connection: sqlite3.Connection, *, reusable: bool) -> None:
        """Give a connection back: kept if ``reusable`` and idle room is left, else closed."""
        if reusable and not connection.in_transaction:
            with self._lock:
                if not self._closed and len(self._idle) < self._max_idle:
                    self._idle.append(connection)
                    return
        connection.close()


class SqliteTransaction:
    """The statements of one unit of work on one connection, run on the database's threads.

    Every statement of the unit goes through ``_call``, one at a time on its connection:
    a statement whose caller was cancelled may still be running when the unit ends.
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._queries = database.queries
        self.codec: Codec = database.codec
        self._connection: sqlite3.Connection | None = None
        self._used = False  # a statement was handed to a thread (it may not have run yet)
        self._serial = threading.Lock()
        self._writing = False
        self._holds_writer = False
        self._reusable = True

    async def _call(self, work: Callable[[sqlite3.Connection], T], params: Params) -> T:
        def job() -> T:
            with self._serial:
                if self._connection is None:
                    self._connection = self._database.acquire()
                return work(self._connection)

        self._used = True
        try:
            return await self._database.run(job)
        except sqlite3.Error as error:
            raise self._failed(error, params) from error

    def _failed(self, error: sqlite3.Error, params: Params) -> Exception:
        translated = translate(error, params)
        if not isinstance(error, sqlite3.IntegrityError):
            self._reusable = False
        return translated

    async def _take_writer(self) -> None:
        """Queue for the database's one writer, as long as SQLite's own busy timeout."""
        try:
            async with asyncio.timeout(self._database.busy_timeout):
                await self._database.writer.acquire()
        except TimeoutError:
            raise UpstreamUnavailableError(DATABASE_UNAVAILABLE) from None
        self._holds_writer = True

    def _drop_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            self._database.writer.release()

    async def _statement(
        self, query: Q, params: Params, filters: Sequence[Q], writes: bool, fetch: Fetch
    ) -> Any:
        text = self._queries.text(query, filters, lock=writes)
        found = await self._run_steps([(text, params, fetch)], writes)
        return found[0]

    async def _run_steps(
        self, steps: Sequence[tuple[str, Params, Fetch]], writes: bool
    ) -> list[Any]:
        """Run ``steps`` in order in one hop to a thread (after ``BEGIN IMMEDIATE`` when
        they write and the unit has not yet): a create's three statements cost one hop,
        not three. A failure is translated with the parameters of the step that failed."""
        begin = writes and not self._writing
        if begin and not self._holds_writer:
            await self._take_writer()
        failing: Params = {}  # the parameters of the step running, for ``_failed``

        def work(connection: sqlite3.Connection) -> list[Any]:
            if begin:
                connection.execute("BEGIN IMMEDIATE")
                self._writing = True
            results: list[Any] = []
            for text, params, fetch in steps:
                failing.clear()
                failing.update(params)
                cursor = connection.cursor()
                # Plain tuples made dicts here: sqlite3.Row finds a column by name with a
                # case-insensitive scan of every column, on every read of a value.
                cursor.row_factory = None
                try:
                    cursor.execute(text, params)
                    if fetch == "count":
                        results.append(cursor.rowcount)
                        continue
                    if fetch == "rows":
                        results.append(cursor.fetchall())
                        continue
                    names = [column[0] for column in cursor.description or ()]
                    if fetch == "one":
                        found = cursor.fetchone()
                        results.append(
                            None if found is None else dict(zip(names, found, strict=True))
                        )
                    else:
                        results.append(
                            [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
                        )
                finally:
                    cursor.close()
            return results

        try:
            return await self._call(work, failing)
        except Exception:
            # BEGIN IMMEDIATE itself failed: nothing is held. (A cancelled caller keeps the
            # writer: its statement may still be running, and ``close`` ends both.)
            if begin and not self._writing:
                self._drop_writer()
            raise

    @property
    def in_transaction(self) -> bool:
        """Whether the unit has written or locked: a transaction of its own is open."""
        return self._writing or self._holds_writer

    async def fetch_one(
        self, query: Q, params: Params, *, filters: Sequence[Q] = (), writes: bool = False
    ) -> Row | None:
        """The first row of ``query``."""
        row: Row | None = await self._statement(query, params, filters, writes, "one")
        return row

    async def fetch_alone(
        self, query: Q, params: Params, *, filters: Sequence[Q] = ()
    ) -> Row | None:
        """``fetch_one`` (a unit that has not written already gives its connection back on
        the loop's thread when it ends)."""
        return await self.fetch_one(query, params, filters=filters)

    async def fetch_all(self, query: Q, params: Params, *, filters: Sequence[Q] = ()) -> list[Row]:
        """Every row of a read."""
        found: list[Row] = await self._statement(query, params, filters, False, "all")
        return found

    async def fetch_rows(self, query: Q, params: Params) -> list[tuple[Any, ...]]:
        """Every row of a read, as sqlite3 gives them."""
        found: list[tuple[Any, ...]] = await self._statement(query, params, (), False, "rows")
        return found

    async def execute(self, query: Q, params: Params) -> int:
        """Run a write inside the write transaction; the number of rows it changed."""
        changed: int = await self._statement(query, params, (), True, "count")
        return changed

    async def write_all(self, steps: Sequence[Step]) -> list[Any]:
        """Run ``steps`` in order in the write transaction, in one hop to a thread."""
        texts = [
            (self._queries.text(query, (), lock=True), params, fetch)
            for query, params, fetch in steps
        ]
        return await self._run_steps(texts, True) if texts else []

    async def write_alone(self, query: Q, params: Params) -> Row | None:
        """The statements of ``query`` (a script) as a transaction of its own, committed
        with the scripts of other units that arrive meanwhile (``GroupCommit``); the first
        row of the last one, once committed."""
        if self._writing or self._holds_writer:
            raise RuntimeError("write_alone is a transaction of its own: none may be open")
        return await self._database.group_commit.run(_script(self._queries.text(query)), params)

    async def commit(self, steps: Sequence[Step] = ()) -> None:
        """Commit the write transaction, if one is open (``steps`` written first), and let
        the next writer in."""
        if steps:
            await self.write_all(steps)
        if self._connection is None or not self._writing:
            return

        def work(connection: sqlite3.Connection) -> None:
            connection.execute("COMMIT")
            self._writing = False

        await self._call(work, {})
        self._drop_writer()

    async def ping(self) -> None:
        """Read the schema table: the file is there and readable."""
        await self.fetch_one(Q.PING, {})

    async def pool_use(self) -> PoolUse | None:
        """``None``: connections are opened on demand, with no pool to report on."""
        return None

    async def close(self) -> None:
        """Roll back what was not committed; give the connection back."""

        def finish() -> None:
            with self._serial:
                connection, self._connection = self._connection, None
                if connection is None:
                    return
                try:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                except sqlite3.Error:
                    self._reusable = False
                finally:
                    self._writing = False
                    self._database.release(connection, reusable=self._reusable)

        try:
            if self._used and not self._gave_back_here():
                # Shielded: a cancelled caller must not leave the connection unreturned.
                await asyncio.shield(self._database.run(finish, finishing=True))
        finally:
            self._drop_writer()

    def _gave_back_here(self) -> bool:
        """Give the connection back on this thread when that cannot block: no statement of
        the unit is running (``_serial`` is free) and no transaction is open (nothing to
        roll back). Saves a read, and a committed write, their second hop to a thread."""
        if not self._reusable or not self._serial.acquire(blocking=False):
            return False  # a broken connection is closed on a thread, as before
        try:
            connection = self._connection
            if connection is not None and connection.in_transaction:
                return False
            self._connection = None
            self._writing = False
            if connection is not None:
                self._database.release(connection, reusable=self._reusable)
            return True
        finally:
            self._serial.release()


class _SqliteMigrationTarget:
    """Applies migrations on one connection, each under BEGIN IMMEDIATE."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def applied_versions(self) -> set[int]:
        table = self._connection.execute(_VERSION_TABLE_EXISTS, (VERSION_TABLE,)).fetchone()
        if table is None:
            return set()
        return {row[0] for row in self._connection.execute(_APPLIED_VERSIONS)}

    def apply_if_pending(self, migration: Migration) -> bool:
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(_CREATE_VERSION_TABLE)
            done = connection.execute(_IS_APPLIED, (migration.version,)).fetchone()
            if done is None:
                for statement in split_statements(migration.sql):
                    connection.execute(statement)
                applied_at = SqliteCodec().timestamp(datetime.now(UTC))
                connection.execute(_RECORD_VERSION, (migration.version, migration.name, applied_at))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return done is None


@functools.cache
def _script(text: str) -> tuple[str, ...]:
    """The statements of a query's text, split once."""
    return tuple(split_statements(text))


def split_statements(script: str) -> Iterator[str]:
    """The statements of a SQL script, split where SQLite itself says one is complete."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    leftover = [
        line for line in pending.splitlines() if line.strip() and not line.strip().startswith("--")
    ]
    if leftover:
        raise ValueError(f"incomplete SQL statement at the end of a script: {leftover[0]!r}")
