"""What the SQL adapters promise beyond the repository contract: instants in UTC, the round
trips a unit of work costs, the query catalog, SQLite's settings, borrowed pools."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import attrs
import psycopg
import pytest
from contract_records import T0, SqlAdapter, backup, session, user, workspace
from psycopg_pool import AsyncConnectionPool

from strongroom.adapters.runtime.blocking import blocking, blocking_call
from strongroom.adapters.sql.catalog import (
    LOCK_MARKER,
    Dialect,
    Q,
    QueryFileError,
    parse_queries,
    queries_for,
    to_pyformat,
)
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.backups import BackupKind
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Session
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.workspaces import Membership, Workspace
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving.access import Bearer


@pytest.fixture(params=["sqlite", "postgres"])
def sql_adapter(request: pytest.FixtureRequest) -> SqlAdapter:
    """Each SQL adapter, empty."""
    database: SqliteDatabase | PostgresDatabase = request.getfixturevalue(
        f"{request.param}_database"
    )
    return SqlAdapter(request.param, database.uow)


class TestInstants:
    """Instants are stored as instants and read back in UTC, to the microsecond."""

    def test_instants_come_back_in_utc(self, sql_adapter: SqlAdapter) -> None:
        """Written with +05:30, read back as the same instant with a zero offset."""
        written = T0.astimezone(timezone(timedelta(hours=5, minutes=30)))
        ada = attrs.evolve(user(), created_at=written)
        sql_adapter.store(ada)
        with sql_adapter.uow() as uow:
            found = uow.users.get(ada.id)
        assert found is not None
        assert found.created_at == T0
        assert found.created_at.utcoffset() == timedelta(0)
        assert found.created_at.microsecond == T0.microsecond

    def test_naive_instants_are_refused(self, sql_adapter: SqlAdapter) -> None:
        """A naive datetime has no instant: refusing it beats guessing a zone."""
        naive = attrs.evolve(user(), created_at=T0.replace(tzinfo=None))
        with sql_adapter.uow() as uow, pytest.raises(ValueError, match="naive"):
            uow.users.add(naive)


class CountingCursor:
    """Counts the statements psycopg sends (each is one round trip, or shares one with the
    statement after it in a pipeline)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        original = psycopg.AsyncCursor.execute

        async def execute(
            cursor: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any
        ) -> Any:
            text = query.decode() if isinstance(query, bytes) else str(query)
            self.sent.append(" ".join(text.split())[:40])
            return await original(cursor, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)


@pytest.fixture
def counted(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> tuple[PostgresDatabase, CountingCursor]:
    """The PostgreSQL database, with its statements counted."""
    return postgres_database, CountingCursor(monkeypatch)


def _member_with_session(
    database: PostgresDatabase, role: str, *records: object
) -> tuple[Workspace, str]:
    """A workspace with one member of ``role``, her live session's token, and ``records``."""
    ada = user()
    target = workspace(ada)
    token = format_token(TokenKind.SESSION, os.urandom(32))
    now = datetime.now(UTC)
    mine = Session(uuid4(), hash_token(token), ada.id, target.id, now, now + timedelta(days=1))
    SqlAdapter("postgres", database.uow).store(
        ada, target, Membership(target.id, ada.id, role, T0), mine, *records
    )
    return target, token


class TestPostgresRoundTrips:
    """Reads cost one round trip each; a transaction is opened only to write or lock."""

    def test_authenticating_is_one_statement(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """A session with its person and role: one SELECT, no BEGIN, no COMMIT."""
        database, counter = counted
        ada = user()
        target = workspace(ada)
        mine = session(ada.id, target.id)
        SqlAdapter("postgres", database.uow).store(
            ada, target, Membership(target.id, ada.id, "admin", T0), mine
        )
        counter.sent.clear()
        with blocking(database.uow()) as uow:
            grant = uow.sessions.find(mine.token_hash)
        assert grant is not None
        assert grant.role is not None
        assert len(counter.sent) == 1
        assert counter.sent[0].startswith("SELECT")

    def test_a_session_read_is_one_statement(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """``GET`` of a backup and of a page with a session: the credential check joined
        into the read, one SELECT each, through the facade as HTTP calls it."""
        database, counter = counted
        target, token = _member_with_session(database, "viewer")
        kept = backup(target.id)
        SqlAdapter("postgres", database.uow).store(kept)
        facade = blocking(bootstrap(uow=database.uow))
        counter.sent.clear()
        assert facade.backups.get(Bearer(token), kept.id) == kept
        assert facade.backups.list_in(Bearer(token), target.id, PageRequest(50, None)).items == [
            kept
        ]
        assert [statement.split()[0] for statement in counter.sent] == ["SELECT", "SELECT"]

    def test_a_session_read_model_is_one_statement(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """The read models of both reads (the JSON rendered by PostgreSQL): one statement
        each, no BEGIN, no COMMIT."""
        database, counter = counted
        target, token = _member_with_session(database, "viewer")
        kept = backup(target.id)
        SqlAdapter("postgres", database.uow).store(kept)
        facade = blocking(bootstrap(uow=database.uow))
        counter.sent.clear()
        facade.backups.get_rendered(Bearer(token), kept.id)
        facade.backups.list_rendered(Bearer(token), target.id, PageRequest(50, None))
        assert [statement.split()[0] for statement in counter.sent] == ["SELECT", "WITH"]

    def test_a_create_is_a_counted_read_then_one_write(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """Creating a backup through the facade as a ``Caller``: the workspace with its
        count (one SELECT), then the counted insert, its audit event and the commit's
        deadline (one statement in autocommit, no BEGIN, no COMMIT): the quota is the
        counter's."""
        database, counter = counted
        target, token = _member_with_session(database, "admin")
        facade = blocking(bootstrap(uow=database.uow))
        caller = facade.access.authenticate(token)
        counter.sent.clear()
        created = facade.backups.create(caller, target.id, "Nightly", BackupKind.MANUAL)
        sent = [statement.split()[0] for statement in counter.sent]
        assert sent == ["SELECT", "WITH"]
        assert facade.backups.get(caller, created.id) == created
        assert facade.workspaces.quotas(caller, target.id)[0].usage == 1

    def test_a_session_create_is_two_round_trips(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """With the session's bearer: the session joined with the workspace and its count
        (one SELECT), then the event, the backup and the commit's deadline (one statement
        in autocommit: one round trip). The use case decides between the two."""
        database, counter = counted
        target, token = _member_with_session(database, "admin")
        facade = blocking(bootstrap(uow=database.uow))
        counter.sent.clear()
        created = facade.backups.create(Bearer(token), target.id, "Nightly", BackupKind.MANUAL)
        sent = [statement.split()[0] for statement in counter.sent]
        assert sent == ["SELECT", "WITH"]
        assert facade.backups.get(Bearer(token), created.id) == created

    def test_a_unit_that_does_nothing_costs_nothing(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """No statement, and no connection taken from the pool."""
        database, counter = counted
        pool = blocking_call(database.pool_of_this_loop())  # the loop blocking views run on
        before = pool.get_stats()["requests_num"]
        with blocking(database.uow()) as uow:
            uow.commit()
        assert counter.sent == []
        assert pool.get_stats()["requests_num"] == before

    def test_a_create_is_begin_lock_count_insert_insert_commit(
        self, counted: tuple[PostgresDatabase, CountingCursor]
    ) -> None:
        """The statements of creating a backup, as the use case runs them."""
        database, counter = counted
        ada = user()
        target = workspace(ada)
        SqlAdapter("postgres", database.uow).store(ada, target)
        counter.sent.clear()
        with blocking(database.uow()) as uow:
            uow.workspaces.get(target.id, for_update=True)
            uow.backups.count(target.id)
            uow.backups.add(backup(target.id))
            uow.commit()
        kinds = [statement.split()[0] for statement in counter.sent]
        # The INSERT before COMMIT is the commit's deadline (no write commits past it).
        assert kinds == ["BEGIN", "SELECT", "SELECT", "INSERT", "INSERT", "COMMIT"]


class TestAsyncUnits:
    """Units of work are coroutines: one per task, any event loop, no loop ever blocked."""

    def test_a_unit_inside_another_in_one_task_is_refused(self, sql_adapter: SqlAdapter) -> None:
        """The inner one would wait for the outer one's locks: refused at once."""

        async def nested() -> None:
            async with sql_adapter.async_uow(), sql_adapter.async_uow():
                pass

        with pytest.raises(RuntimeError, match="already open in this task"):
            asyncio.run(nested())

    def test_units_in_separate_tasks_of_one_loop_may_overlap(self, sql_adapter: SqlAdapter) -> None:
        """Concurrent tasks each have their own unit."""
        ada = user()
        sql_adapter.store(ada)

        async def read() -> bool:
            async with sql_adapter.async_uow() as uow:
                return await uow.users.get(ada.id) == ada

        async def both() -> list[bool]:
            return list(await asyncio.gather(read(), read()))

        assert asyncio.run(both()) == [True, True]

    def test_sqlite_writers_queue_on_the_database_threads(
        self, sqlite_database: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Writers holding the write lock in turn: none is refused as busy, and connections
        are used on the database's threads, never on the event loop."""
        writers = 8
        threads: set[str] = set()
        acquire = sqlite_database.acquire

        def acquire_noting_the_thread() -> sqlite3.Connection:
            threads.add(threading.current_thread().name)
            return acquire()

        monkeypatch.setattr(sqlite_database, "acquire", acquire_noting_the_thread)

        async def write() -> None:
            async with sqlite_database.uow() as uow:
                await uow.users.add(user())
                await asyncio.sleep(0.02)  # holding the writer while the others queue
                await uow.commit()

        async def run() -> None:
            await asyncio.gather(*(write() for _ in range(writers)))

        asyncio.run(run())
        assert threads
        assert all(name.startswith("strongroom-sqlite") for name in threads), threads
        with closing(sqlite_database.connect()) as connection:
            assert connection.execute("SELECT count(*) FROM users").fetchone()[0] == writers

    def test_postgres_serves_every_loop_with_a_pool_of_its_own(
        self, postgres_database: PostgresDatabase
    ) -> None:
        """A loop that ends takes its pool with it; the others go on."""
        ada = user()
        SqlAdapter("postgres", postgres_database.uow).store(ada)

        async def read() -> tuple[AsyncConnectionPool[Any], bool]:
            async with postgres_database.uow() as uow:
                found = await uow.users.get(ada.id)
            return await postgres_database.pool_of_this_loop(), found == ada

        first, found_first = asyncio.run(read())
        second, found_second = asyncio.run(read())
        assert found_first
        assert found_second
        assert first is not second
        assert first.closed
        assert second.closed
        assert blocking_call(read())[1]


class TestSqliteSettings:
    """The embedded database's settings."""

    def test_wal_foreign_keys_and_full_sync(self, sqlite_database: SqliteDatabase) -> None:
        """WAL (readers never wait), foreign keys enforced, commits durable."""
        with closing(sqlite_database.connect()) as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            assert connection.execute("PRAGMA synchronous").fetchone()[0] == 2

    def test_a_closed_database_refuses_new_units(self, sqlite_database: SqliteDatabase) -> None:
        """Closing is final."""
        sqlite_database.close()
        with pytest.raises(RuntimeError), blocking(sqlite_database.uow()) as uow:
            uow.ping()


class TestBorrowedPools:
    """An embedder's pool is used as lent and never closed."""

    def test_a_borrowed_pool_stays_open_and_its_connections_unchanged(
        self, pg_conninfo: str, postgres_database: PostgresDatabase
    ) -> None:
        """Non-autocommit connections come back non-autocommit; closing leaves the pool."""
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            pg_conninfo, min_size=1, max_size=1, open=False
        )
        blocking_call(pool.open())  # on the loop blocking views run on, as an embedder would
        try:
            with PostgresDatabase(pool) as database:
                SqlAdapter("postgres", database.uow).store(user())
                with blocking(database.uow()) as uow:
                    uow.ping()
                assert blocking_call(database.pool_of_this_loop()) is pool
            assert not pool.closed

            async def autocommit_of_a_pooled_connection() -> bool:
                async with pool.connection() as connection:
                    return connection.autocommit

            assert blocking_call(autocommit_of_a_pooled_connection()) is False
        finally:
            blocking_call(pool.close())


class TestCatalog:
    """The named queries."""

    @pytest.mark.parametrize("dialect", list(Dialect))
    def test_each_dialect_has_every_query(self, dialect: Dialect) -> None:
        """Loading checks that the files define exactly the queries of ``Q``."""
        queries = queries_for(dialect)
        assert all(queries.raw(name) for name in Q)

    def test_the_lock_marker_is_a_row_lock_on_postgres_only(self) -> None:
        """Every read that may lock is written once: asked to lock, FOR NO KEY UPDATE on
        PostgreSQL and a plain read on SQLite (its unit holds the one writer); otherwise a
        plain read on both."""
        locking = [name for name in Q if LOCK_MARKER in queries_for(Dialect.POSTGRES).raw(name)]
        assert len(locking) >= 7
        for name in locking:
            postgres = queries_for(Dialect.POSTGRES)
            assert postgres.text(name, lock=True).rstrip().endswith("FOR NO KEY UPDATE")
            assert "FOR " not in queries_for(Dialect.SQLITE).text(name, lock=True)
            for dialect in Dialect:
                assert "FOR " not in queries_for(dialect).text(name)
                assert LOCK_MARKER not in queries_for(dialect).text(name)
            assert LOCK_MARKER not in queries_for(Dialect.SQLITE).text(name, lock=True)

    def test_a_claim_skips_rows_locked_by_others_on_postgres_only(self) -> None:
        """The claim's read is written once: asked to lock, a row lock on ``runs`` that
        skips locked rows on PostgreSQL, a plain read on SQLite; no marker survives."""
        postgres = queries_for(Dialect.POSTGRES).text(Q.RUN_NEXT_QUEUED, lock=True)
        assert postgres.rstrip().endswith("FOR NO KEY UPDATE OF runs SKIP LOCKED")
        for dialect in Dialect:
            assert "/*" not in queries_for(dialect).text(Q.RUN_NEXT_QUEUED, lock=True)
            assert "FOR " not in queries_for(dialect).text(Q.RUN_NEXT_QUEUED)
        assert "FOR " not in queries_for(Dialect.SQLITE).text(Q.RUN_NEXT_QUEUED, lock=True)

    def test_parameters_become_pyformat_for_psycopg(self) -> None:
        """``:name`` becomes ``%(name)s``; casts and literal percents survive."""
        converted = to_pyformat("SELECT :a::text, '50%', x->>'k' FROM t WHERE b = :b_2")
        assert converted == "SELECT %(a)s::text, '50%%', x->>'k' FROM t WHERE b = %(b_2)s"

    def test_filters_go_where_the_marker_is(self) -> None:
        """Fragments are joined at ``/*filters*/``; a query without it takes none."""
        queries = queries_for(Dialect.SQLITE)
        text = queries.text(Q.AUDIT_LIST, [Q.FILTER_AUDIT_ACTION, Q.FILTER_AUDIT_SINCE])
        assert "AND action = :action AND occurred_at >= :since" in text
        with pytest.raises(ValueError, match="no filters"):
            queries.text(Q.USER_GET, [Q.FILTER_AUDIT_ACTION])

    @pytest.mark.parametrize(
        "text",
        ["SELECT 1", "-- name: a\nSELECT 1\n-- name: a\nSELECT 2"],
    )
    def test_malformed_files_are_refused(self, text: str) -> None:
        """SQL before any name, or a name defined twice."""
        with pytest.raises(QueryFileError):
            parse_queries(text, "test.sql")
