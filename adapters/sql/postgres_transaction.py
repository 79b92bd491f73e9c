"""PostgreSQL's unit of work (``PostgresTransaction``: the ``Statements`` of one unit on one
pooled connection of its loop's pool, with its deadlines and retries), and the runner of
its group commit's batches (``postgres_group_commit``). See ``postgres`` for the database
and its pools."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg_pool import AsyncConnectionPool

from strongroom.adapters.sql.catalog import Q, Queries
from strongroom.adapters.sql.errors import DATABASE_UNAVAILABLE, refusal
from strongroom.adapters.sql.postgres_group_commit import (
    FailWaiting,
    GroupCommit,
    RunAlone,
    Statement,
)
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.adapters.sql.statements import Fetch, Step
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.ports.driven.statistics import PoolUse


class Pools(Protocol):
    """What a transaction takes from its ``PostgresDatabase``: the pool of the running
    event loop, its group commit, the statements and their deadline."""

    @property
    def queries(self) -> Queries:
        """The statements' texts, in PostgreSQL's dialect."""
        ...

    @property
    def codec(self) -> Codec:
        """How psycopg takes and gives values."""
        ...

    @property
    def statement_deadline(self) -> float:
        """The client's bound on each statement, in seconds."""
        ...

    def opened_pool_of_this_loop(self) -> AsyncConnectionPool[Any] | None:
        """The running loop's pool if it is open already (no await)."""
        ...

    async def pool_of_this_loop(self) -> AsyncConnectionPool[Any]:
        """The running loop's pool, opened on first use."""
        ...

    async def group_commit_of_this_loop(self) -> GroupCommit:
        """The running loop's group commit."""
        ...


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
        # A COMMIT past its deadline (``_commit_guarded``) is one: query_canceled.
        return UpstreamUnavailableError(DATABASE_UNAVAILABLE)
    return error


async def _give_back(
    pool: AsyncConnectionPool[Any], connection: psycopg.AsyncConnection[Any], autocommit: bool
) -> None:
    """Return a connection as it was lent (a broken one is discarded by the pool)."""
    if not autocommit and not connection.broken and not connection.closed:
        with suppress(psycopg.Error):  # if it fails, the pool resets or discards it
            await connection.set_autocommit(False)
    await pool.putconn(connection)


def _shut(fileno: int) -> None:
    """Shut a socket without closing its descriptor (the event loop still watches it): the
    statement waiting on it fails at once instead of hanging on a silent server."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: the statement fails or has finished anyway


COMMIT_DEADLINE = (
    b"INSERT INTO commit_deadlines (backend_pid, commit_by) VALUES (pg_backend_pid(), %s)"
    b" ON CONFLICT (backend_pid) DO UPDATE SET commit_by = EXCLUDED.commit_by"
)
"""The last step before a ``COMMIT``: the latest instant at which it may commit, checked by
the deferred trigger ``commit_deadlines_checked`` (migration 0020) inside the ``COMMIT``."""
COMMIT_MARGIN = 1.0
"""How long before the client cuts a commit's statements the server must have begun to
commit them: covers the difference between the two clocks."""


async def _commit_guarded(connection: psycopg.AsyncConnection[Any], deadline: _Deadline) -> None:
    """Queue, in an open pipeline, ``COMMIT`` behind ``COMMIT_DEADLINE`` at
    ``deadline.commit_by``.

    A write answered 502 must not commit (contract section 13). The client answers 502
    only once ``deadline`` has cut the connection, but a paused or overloaded server may
    still hold the statements in its socket and run them later, when nothing can cancel
    them first: the ``COMMIT`` itself, through its deferred trigger, compares the server's
    clock with ``commit_by`` (``COMMIT_MARGIN`` before the cut) and rolls back once the
    client may have given up. Both unprepared (``_may_prepare``).
    """
    await connection.execute(COMMIT_DEADLINE, (deadline.commit_by,), prepare=False)
    await connection.execute(b"COMMIT", prepare=False)


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

    __slots__ = ("_fileno", "_latest", "_timer", "cut")

    def __init__(self, connection: psycopg.AsyncConnection[Any], seconds: float) -> None:
        self.cut = False
        self._fileno = connection.fileno()
        # Read before the timer starts: the cut (and any 502) comes after this instant.
        self._latest = time.time() + max(seconds - COMMIT_MARGIN, 0.0)
        self._timer = asyncio.get_running_loop().call_later(seconds, self._shut)

    @property
    def commit_by(self) -> datetime:
        """The latest instant at which the block's statements may commit:
        ``COMMIT_MARGIN`` before the client cuts them."""
        return datetime.fromtimestamp(self._latest, UTC)

    def _shut(self) -> None:
        self.cut = True
        _shut(self._fileno)

    def __enter__(self) -> _Deadline:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()


class PostgresTransaction:
    """The statements of one unit of work on one pooled connection of its loop's pool."""

    def __init__(self, database: Pools) -> None:
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
                    async with _cursor(connection, fetch) as cursor:
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

    @property
    def in_transaction(self) -> bool:
        """Whether the unit has written or locked: a transaction of its own is open."""
        return self._writing

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

    async def fetch_rows(self, query: Q, params: Params) -> list[tuple[Any, ...]]:
        """Every row of a read as a tuple, received in the binary format."""
        found: list[tuple[Any, ...]] = await self._run(query, params, (), False, "rows")
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
        texts = [
            (self._queries.text(query, ()).encode(), params, fetch)
            for query, params, fetch in steps
        ]
        retried = False
        while True:
            began_writing = self._writing
            deadline: _Deadline | None = None
            cursors: list[psycopg.AsyncCursor[Any]] = []
            try:
                connection = await self._take_connection()
                seconds = self._database.statement_deadline
                with _Deadline(connection, seconds) as deadline:
                    try:
                        async with connection.pipeline():
                            if not self._writing:
                                await connection.execute(b"BEGIN")
                                if retried:
                                    await connection.execute(RETRY_LOCK_TIMEOUT)
                            for index, (text, params, fetch) in enumerate(texts):
                                cursor = _cursor(connection, fetch)
                                await cursor.execute(text, params, prepare=_may_prepare(index))
                                cursors.append(cursor)
                            if commit:
                                await _commit_guarded(connection, deadline)
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
                merged = {k: v for _, params, _ in reversed(texts) for k, v in params.items()}
                raise translate(error, merged) from error

    async def write_alone(self, query: Q, params: Params) -> Row | None:
        """``query``, one statement, committed before it answers: one round trip. Run in
        the next batch of this loop's group commit (``postgres_group_commit``), which
        commits concurrent ones together and a lone one alone. The statement takes
        ``COMMIT_BY``, its commit's deadline or ``None``, and writes ``COMMIT_DEADLINE``'s
        row when given one (``backup_create_counted``): a lone statement is all it sends."""
        if self._writing:
            raise RuntimeError("write_alone is a transaction of its own: none may be open")
        text = self._queries.text(query).encode()
        group_commit = await self._database.group_commit_of_this_loop()
        return await group_commit.run(
            (text, params), lambda retry: self._write_alone_now(text, params, retry)
        )

    async def _write_alone_now(self, text: bytes, params: Params, retried: bool) -> Row | None:
        """``text``, one statement, in a transaction of its own sent with its guarded
        ``COMMIT`` (``_commit_guarded``) on this unit's connection: committed when it
        answers, one round trip (its batch failed as a whole; ``retried``: its batch's
        connection was lost, so this is a retry).

        Retried on another connection when this one was found dead before the server
        answered (a restarted server costs no request). The earlier attempt may still be
        running on the server, or have committed: the statement must do nothing twice and
        say so (``backup_create_counted`` inserts ``ON CONFLICT (id) DO NOTHING``). The
        retry waits for locks at most ``RETRY_LOCK_TIMEOUT`` (as ``write_all``'s). The
        server drops a statement whose client has gone within ``CLIENT_CHECK_MS``
        (``client_connection_check_interval``), and the commit's deadline rolls back one reached
        too late, so an attempt cut while it waits does not commit once it is free.
        """
        while True:
            deadline: _Deadline | None = None
            cursor: psycopg.AsyncCursor[DictRow] | None = None
            try:
                connection = await self._take_connection()
                seconds = self._database.statement_deadline
                with _Deadline(connection, seconds) as deadline:
                    cursor = connection.cursor(row_factory=dict_row)
                    try:
                        async with connection.pipeline():
                            await connection.execute(b"BEGIN")
                            if retried:
                                await connection.execute(RETRY_LOCK_TIMEOUT)
                            await cursor.execute(text, {**params, COMMIT_BY: None})
                            await _commit_guarded(connection, deadline)
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
                if (deadline is not None and deadline.cut) or _may_spoil_prepared(error):
                    await self._discard()
                raise translate(error, params) from error

    async def commit(self, steps: Sequence[Step] = ()) -> None:
        """Commit the transaction, if one is open (guarded: ``_commit_guarded``);
        ``steps`` (writes) first, sent in the same round trip as the ``COMMIT``."""
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
        seconds = self._database.statement_deadline
        try:
            with _Deadline(connection, seconds) as deadline:
                if command == b"COMMIT":
                    async with connection.pipeline():
                        await _commit_guarded(connection, deadline)
                else:
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


COMMIT_BY = "commit_by"
"""A ``write_alone`` statement's parameter: its commit's deadline (or ``None``), whose
``COMMIT_DEADLINE`` row the statement writes itself (``backup_create_counted``)."""


def workspace_of(statement: Statement) -> str:
    """The workspace whose row a ``write_alone`` statement (a backup's create in a session)
    locks."""
    return str(statement[1]["workspace_id"])


async def run_batch(database: Pools, statements: Sequence[Statement]) -> list[Row | None]:
    """The runner of ``postgres_group_commit``: ``statements`` on one connection of this
    loop's pool; the first row of each. A lone statement runs in autocommit with its
    commit's deadline as its ``COMMIT_BY``: it writes the deadline's row, its own commit
    checks it (migration 0020), and it is all that is sent. Several run in one pipeline
    between ``BEGIN`` and ``COMMIT``, the first carrying the deadline.

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
            commit_by: datetime | None = deadline.commit_by
            if len(statements) == 1:
                (text, params), cursor = statements[0], connection.cursor(row_factory=dict_row)
                cursors.append(cursor)
                await cursor.execute(text, {**params, COMMIT_BY: commit_by}, prepare=True)
                return [await cursor.fetchone()]
            async with connection.pipeline():
                await connection.execute(b"BEGIN")
                for index, (text, params) in enumerate(statements):
                    cursor = connection.cursor(row_factory=dict_row)
                    cursors.append(cursor)
                    # The first step is prepared (unless the pool never prepares), so
                    # the later ones, the same text, run prepared (``_may_prepare``).
                    await cursor.execute(
                        text, {**params, COMMIT_BY: commit_by}, prepare=True if index == 0 else None
                    )
                    commit_by = None  # one deadline row per transaction
                await connection.execute(b"COMMIT")
            return [await cursor.fetchone() for cursor in cursors]
    except psycopg.Error as error:
        lone = len(statements) == 1
        if deadline is not None and deadline.cut:
            keep = False
            raise FailWaiting(UpstreamUnavailableError(DATABASE_UNAVAILABLE)) from error
        keep = not _may_spoil_prepared(error)
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


def _cursor(connection: psycopg.AsyncConnection[Any], fetch: Fetch) -> psycopg.AsyncCursor[Any]:
    """A cursor giving dicts, or (``rows``) tuples in the binary format: no dict made and
    no text parsed per row."""
    if fetch == "rows":
        return connection.cursor(row_factory=tuple_row, binary=True)
    return connection.cursor(row_factory=dict_row)


async def _result(cursor: psycopg.AsyncCursor[Any], fetch: Fetch) -> Any:
    if fetch == "one":
        return await cursor.fetchone()
    if fetch in ("all", "rows"):
        return await cursor.fetchall()
    return cursor.rowcount
