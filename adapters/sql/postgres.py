"""The PostgreSQL adapter (psycopg 3 and psycopg-pool): production.

    database = PostgresDatabase.from_url("postgresql://...")  # its pool is created closed
    database.open()               # in the app's lifespan: opens the pool it owns
    database.migrate()            # apply pending migrations (safe with several instances)
    uow_factory = database.uow    # a UnitOfWorkFactory
    database.close()              # closes the pool it owns, stops the statement watchdog

An embedder passes its own pool, ``PostgresDatabase(pool)``, and keeps opening and closing
it: Strongroom never closes a pool it did not create.

Connections run in autocommit: a unit of work's reads before its first write or lock cost
one round trip each, and the first statement that writes or locks sends ``BEGIN`` (see
``repositories``). ``get_for_update`` is ``SELECT ... FOR NO KEY UPDATE``.

Faults: nothing waits without bound. Taking a connection waits at most the pool's timeout,
connecting at most ``connect_timeout``, and every statement at most ``statement_timeout``,
enforced by the server (``statement_timeout``, on pools made by ``create_pool``) and by the
client (a watchdog shuts the socket of a statement that outlives its deadline, which also
covers a paused server or a silent network). Each gives ``UpstreamUnavailableError``. A
connection found dead before the unit of work wrote anything (the server restarted) is
replaced and the statement retried, so a restart costs no request an error.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Self
from uuid import UUID

import attrs
import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Json
from psycopg_pool import ConnectionPool

from strongroom.adapters.sql.catalog import Dialect, Q, queries_for
from strongroom.adapters.sql.errors import DATABASE_UNAVAILABLE, refusal
from strongroom.adapters.sql.migrate import (
    VERSION_TABLE,
    Migration,
    migrations_for,
    run_migrations,
)
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.adapters.sql.unit_of_work import OneUnitPerThread, SqlUnitOfWork
from strongroom.domain.errors import UpstreamUnavailableError

# pg_advisory_xact_lock key of the migrator ("strongroom" in ASCII, truncated to 63 bits).
MIGRATION_LOCK_KEY = 0x7374726F6E67726F
# Extra time the client gives a statement beyond the server's statement_timeout, so that
# the server's clean cancellation normally comes first and the connection stays usable.
_CLIENT_GRACE = 1.0

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
) -> ConnectionPool[psycopg.Connection[Any]]:
    """A closed pool configured for Strongroom: autocommit, UTC, bounded waits.

    ``timeout`` bounds the wait for a connection and the pool's attempts to reconnect,
    ``connect_timeout`` (whole seconds, at least 2) each connection attempt,
    ``statement_timeout`` each statement (server side).
    """
    options = (
        "-c TimeZone=UTC"
        f" -c statement_timeout={round(statement_timeout * 1000)}"
        f" -c idle_in_transaction_session_timeout={round(idle_in_transaction_timeout * 1000)}"
    )
    return ConnectionPool(
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


@attrs.define
class _Watch:
    deadline: float
    fileno: int
    cut: bool = False


class StatementWatchdog:
    """Shuts the socket of a connection whose statement outlives its deadline.

    libpq waits for an answer as long as the socket is open; a paused server, or a network
    that drops packets without resetting the connection, would hang the request forever.
    Shutting the socket makes the waiting statement fail at once (the server rolls its
    transaction back when it notices). One thread serves every connection of a database.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._watches: dict[int, _Watch] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    @contextmanager
    def watching(self, fileno: int, seconds: float) -> Iterator[_Watch]:
        """Watch one statement on socket ``fileno``; ``.cut`` tells whether it was cut."""
        watch = _Watch(time.monotonic() + seconds, fileno)
        token = next(self._tokens)
        with self._condition:
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(
                    target=self._run, name="strongroom-statement-watchdog", daemon=True
                )
                self._thread.start()
            self._watches[token] = watch
            if len(self._watches) == 1:
                self._condition.notify()
        try:
            yield watch
        finally:
            with self._condition:
                self._watches.pop(token, None)

    def stop(self) -> None:
        """End the watchdog thread."""
        with self._condition:
            self._stopped = True
            thread, self._thread = self._thread, None
            self._condition.notify()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        with self._condition:
            while not self._stopped:
                now = time.monotonic()
                for token, watch in list(self._watches.items()):
                    if watch.deadline <= now:
                        del self._watches[token]
                        watch.cut = True
                        _shut(watch.fileno)
                wait = min((w.deadline for w in self._watches.values()), default=None)
                self._condition.wait(None if wait is None else max(0.0, wait - now))


def _shut(fileno: int) -> None:
    try:
        with socket.socket(fileno=os.dup(fileno)) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: the statement fails or has finished anyway


class PostgresDatabase:
    """One PostgreSQL database: a factory of units of work, and its migrations."""

    def __init__(
        self,
        pool: ConnectionPool[Any],
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
        self.watchdog = StatementWatchdog()
        self.queries = queries_for(Dialect.POSTGRES)
        self.codec = PostgresCodec()
        self._guard = OneUnitPerThread()

    @classmethod
    def from_url(
        cls, conninfo: str, *, statement_timeout: float = 10.0, **pool_options: Any
    ) -> PostgresDatabase:
        """A database with a pool of its own (``create_pool``), still closed: ``open()`` it."""
        pool = create_pool(conninfo, statement_timeout=statement_timeout, **pool_options)
        return cls(pool, statement_timeout=statement_timeout, owns_pool=True)

    def open(self, *, wait: bool = False, timeout: float = 30.0) -> None:
        """Open the pool this database owns (a borrowed pool is its owner's to open).

        With ``wait``, block until ``min_size`` connections are up or ``timeout`` passes.
        Without, a database that is down does not stop the app from starting.
        """
        if self.owns_pool:
            self.pool.open(wait=wait, timeout=timeout)

    def close(self) -> None:
        """Stop the watchdog and close the pool this database owns."""
        self.watchdog.stop()
        if self.owns_pool:
            self.pool.close()

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

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
        """A connection of the pool in autocommit mode, given back afterwards."""
        connection = self.pool.getconn()
        was_autocommit = connection.autocommit
        try:
            if not was_autocommit:
                connection.autocommit = True
            yield connection
        finally:
            _give_back(self.pool, connection, was_autocommit)


def _give_back(
    pool: ConnectionPool[Any], connection: psycopg.Connection[Any], autocommit: bool
) -> None:
    """Return a connection as it was lent (a broken one is discarded by the pool)."""
    if not autocommit and not connection.broken and not connection.closed:
        with suppress(psycopg.Error):  # if it fails, the pool resets or discards it
            connection.autocommit = False
    pool.putconn(connection)


class PostgresTransaction:
    """The statements of one unit of work on one pooled connection."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database
        self._queries = database.queries
        self.codec: Codec = database.codec
        self._connection: psycopg.Connection[Any] | None = None
        self._was_autocommit = True
        self._writing = False
        self._retries = 0

    def _take_connection(self) -> psycopg.Connection[Any]:
        if self._connection is None:
            connection = self._database.pool.getconn()
            self._was_autocommit = connection.autocommit
            if not self._was_autocommit:
                try:
                    connection.autocommit = True
                except BaseException:
                    _give_back(self._database.pool, connection, self._was_autocommit)
                    raise
            self._connection = connection
        return self._connection

    def _give_back(self) -> None:
        connection, self._connection = self._connection, None
        self._writing = False
        if connection is not None:
            _give_back(self._database.pool, connection, self._was_autocommit)

    def _run(
        self, query: Q, params: Params, filters: Sequence[Q], writes: bool, fetch: _Fetch
    ) -> Any:
        text = self._queries.text(query, filters).encode()
        while True:
            began_writing = self._writing
            watch: _Watch | None = None
            try:
                connection = self._take_connection()
                with (
                    self._database.watchdog.watching(
                        connection.fileno(), self._database.statement_deadline
                    ) as watch,
                    connection.cursor(row_factory=dict_row) as cursor,
                ):
                    if writes and not self._writing:
                        cursor.execute("BEGIN")
                        self._writing = True
                    cursor.execute(text, params)
                    return _result(cursor, fetch)
            except psycopg.Error as error:
                if self._may_retry(error, began_writing, watch):
                    continue
                raise translate(error, params) from error

    def _may_retry(self, error: psycopg.Error, began_writing: bool, watch: _Watch | None) -> bool:
        """Retry on another connection when this one was found dead before the unit wrote
        anything: nothing is lost, and a restarted server costs no request. Each pooled
        connection may have died with the server, so up to the pool's size of them."""
        connection = self._connection
        if (
            self._retries >= self._database.pool.max_size
            or began_writing
            or connection is None
            or not isinstance(error, psycopg.OperationalError)
            or not (connection.broken or connection.closed)
            or (watch is not None and watch.cut)
        ):
            return False
        self._retries += 1
        self._give_back()  # the pool discards it
        return True

    def fetch_one(
        self, query: Q, params: Params, *, filters: Sequence[Q] = (), writes: bool = False
    ) -> Row | None:
        """The first row of ``query``."""
        found: Row | None = self._run(query, params, filters, writes, "one")
        return found

    def fetch_all(self, query: Q, params: Params, *, filters: Sequence[Q] = ()) -> list[Row]:
        """Every row of a read."""
        found: list[Row] = self._run(query, params, filters, False, "all")
        return found

    def execute(self, query: Q, params: Params) -> int:
        """Run a write inside the transaction; the number of rows it changed."""
        changed: int = self._run(query, params, (), True, "count")
        return changed

    def commit(self) -> None:
        """Commit the transaction, if one is open."""
        if self._connection is None or not self._writing:
            return
        self._end("COMMIT")

    def _end(self, command: str) -> None:
        connection = self._connection
        assert connection is not None
        try:
            with self._database.watchdog.watching(
                connection.fileno(), self._database.statement_deadline
            ):
                connection.execute(command)
        except psycopg.Error as error:
            raise translate(error, {}) from error
        finally:
            self._writing = False

    def ping(self) -> None:
        """``SELECT 1``."""
        self.fetch_one(Q.PING, {})

    def close(self) -> None:
        """Roll back what was not committed; give the connection back."""
        if self._connection is None:
            return
        try:
            if self._writing and not self._connection.broken:
                self._end("ROLLBACK")
        except UpstreamUnavailableError:
            pass  # the connection is gone, and its transaction with it
        finally:
            self._give_back()


_Fetch = Literal["one", "all", "count"]


def _result(cursor: psycopg.Cursor[DictRow], fetch: _Fetch) -> Any:
    if fetch == "one":
        return cursor.fetchone()
    if fetch == "all":
        return cursor.fetchall()
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
