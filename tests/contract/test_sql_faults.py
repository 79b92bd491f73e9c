"""Faults of the SQL adapters: a database that is down, paused, locked, or drops connections
gives ``UpstreamUnavailableError`` within a bounded time, writes nothing partially, and the
adapter recovers by itself when the database is back."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from contract_proxy import TcpProxy
from contract_records import user, workspace

from strongroom.adapters.runtime.blocking import blocking, blocking_call
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.errors import UpstreamUnavailableError
from support.postgres import truncate_all

STATEMENT_TIMEOUT = 0.5


@pytest.fixture
def proxy(pg_conninfo: str) -> Iterator[TcpProxy]:
    """A proxy in front of the session's PostgreSQL server."""
    params = psycopg.conninfo.conninfo_to_dict(pg_conninfo)
    upstream = (str(params.get("host") or "127.0.0.1"), int(str(params.get("port") or 5432)))
    with TcpProxy(upstream) as tcp:
        yield tcp


@pytest.fixture
def proxied(pg_conninfo: str, proxy: TcpProxy) -> Iterator[PostgresDatabase]:
    """The session's database, emptied, reached through ``proxy``, with short timeouts."""
    with psycopg.connect(pg_conninfo, autocommit=True) as connection:
        truncate_all(connection)
    conninfo = psycopg.conninfo.make_conninfo(pg_conninfo, host="127.0.0.1", port=proxy.port)
    with PostgresDatabase.from_url(
        conninfo,
        statement_timeout=STATEMENT_TIMEOUT,
        timeout=1.0,
        connect_timeout=2,
        min_size=2,
        max_size=4,
    ) as database:
        # The pool of the loop that blocking views run on, where the tests' units run.
        blocking_call(database.open(wait=True, timeout=5))
        yield database


def unit(database: PostgresDatabase | SqliteDatabase) -> Any:
    """A new unit of work of ``database`` behind a blocking view."""
    return blocking(database.uow())


class Stopwatch:
    """How long the ``with`` block took."""

    def __enter__(self) -> Stopwatch:
        self.started = time.monotonic()
        return self

    def __exit__(self, *_: object) -> None:
        self.elapsed = time.monotonic() - self.started


class TestPostgresFaults:
    """PostgreSQL that is down, restarts, pauses or holds locks."""

    def test_a_database_that_is_down_is_unavailable_within_the_pool_timeout(self) -> None:
        """Nothing listens: the probe fails after the pool's timeout, not later."""
        with socket_nobody_listens_on() as port:
            database = PostgresDatabase.from_url(
                f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
                timeout=1.0,
                connect_timeout=2,
            )
            with (
                database,
                Stopwatch() as clock,
                pytest.raises(UpstreamUnavailableError),
                unit(database) as uow,
            ):
                uow.ping()
        assert clock.elapsed < 3

    def test_a_restart_costs_no_request(self, proxied: PostgresDatabase, proxy: TcpProxy) -> None:
        """Every pooled connection dies; the next unit of work reconnects and succeeds."""
        ada = user()
        with unit(proxied) as uow:
            uow.users.add(ada)
            uow.commit()
        proxy.cut()
        with unit(proxied) as uow:
            assert uow.users.get(ada.id) == ada
        proxy.cut()
        with unit(proxied) as uow:  # a write first: the BEGIN is retried on a new connection
            uow.users.add(user())
            uow.commit()

    def test_a_connection_lost_mid_transaction_writes_nothing(
        self, proxied: PostgresDatabase, proxy: TcpProxy
    ) -> None:
        """After the first write, a lost connection is an error and the unit is gone."""
        ada, bob = user(), user()

        def write_both() -> None:
            with unit(proxied) as uow:
                uow.users.add(ada)
                proxy.cut()
                uow.users.add(bob)
                uow.commit()

        with pytest.raises(UpstreamUnavailableError):
            write_both()
        with unit(proxied) as uow:
            assert uow.users.get(ada.id) is None
            assert uow.users.get(bob.id) is None

    def test_a_paused_database_is_cut_at_the_deadline_and_recovered_from(
        self, proxied: PostgresDatabase, proxy: TcpProxy
    ) -> None:
        """No answer at all: the deadline ends the statement; later units work again."""
        with unit(proxied) as uow:
            uow.ping()
        proxy.pause()
        try:
            with (
                Stopwatch() as clock,
                pytest.raises(UpstreamUnavailableError),
                unit(proxied) as uow,
            ):
                uow.ping()
        finally:
            proxy.resume()
        assert clock.elapsed < proxied.statement_deadline + 1.5
        with unit(proxied) as uow:
            uow.ping()

    def test_a_lock_held_too_long_is_a_bounded_wait(self, proxied: PostgresDatabase) -> None:
        """A unit waiting for a row lock gives up at the statement timeout."""
        ada = user()
        target = workspace(ada)
        with unit(proxied) as uow:
            uow.users.add(ada)
            uow.workspaces.add(target)
            uow.commit()
        holding, release = threading.Event(), threading.Event()

        def hold_the_lock() -> None:
            with unit(proxied) as uow:
                uow.workspaces.get(target.id, for_update=True)
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        try:
            assert holding.wait(5)
            with (
                Stopwatch() as clock,
                pytest.raises(UpstreamUnavailableError),
                unit(proxied) as uow,
            ):
                uow.workspaces.get(target.id, for_update=True)
        finally:
            release.set()
            holder.join()
        assert STATEMENT_TIMEOUT <= clock.elapsed < STATEMENT_TIMEOUT + 1.5
        with unit(proxied) as uow:
            assert uow.workspaces.get(target.id, for_update=True) == target


class TestSqliteFaults:
    """SQLite that is locked or cannot be opened."""

    def test_a_writer_waiting_beyond_the_busy_timeout_is_unavailable(
        self, sqlite_database: SqliteDatabase
    ) -> None:
        """Another process holds the write lock: readers go on, a writer gives up in time."""
        ada = user()
        with unit(sqlite_database) as uow:
            uow.users.add(ada)
            uow.commit()
        impatient = SqliteDatabase(sqlite_database.path, busy_timeout=0.3)
        blocker = sqlite3.connect(sqlite_database.path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            with unit(impatient) as uow:
                assert uow.users.get(ada.id) == ada  # WAL: reads never wait
            with (
                Stopwatch() as clock,
                pytest.raises(UpstreamUnavailableError),
                unit(impatient) as uow,
            ):
                uow.users.add(user())
            assert clock.elapsed < 2
            blocker.execute("ROLLBACK")
            with unit(impatient) as uow:
                uow.users.add(user())
                uow.commit()
        finally:
            blocker.close()
            impatient.close()

    def test_a_database_that_cannot_be_opened_is_unavailable(self, tmp_path: Path) -> None:
        """A path in a folder that does not exist."""
        with (
            SqliteDatabase(tmp_path / "missing" / "db.sqlite3") as database,
            pytest.raises(UpstreamUnavailableError),
            unit(database) as uow,
        ):
            uow.ping()


class socket_nobody_listens_on:  # noqa: N801 (used as a context manager, reads as a phrase)
    """A local port that was free a moment ago."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        return port

    def __exit__(self, *_: object) -> None:
        return None
