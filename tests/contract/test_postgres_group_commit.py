"""PostgreSQL's group commit (``postgres_group_commit``), what only it does: a lone create
runs alone, lost connections cost no create, and a database out of reach fails every
waiting create within one statement deadline. Its behaviour shared with SQLite's is
tested in ``test_group_commit``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from contract_proxy import TcpProxy
from create_scene import count_batches, new_scene

from strongroom.adapters.sql import postgres, postgres_transaction
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.postgres_group_commit import MAX_BATCH, Statement
from strongroom.domain.errors import UpstreamUnavailableError
from support.postgres import truncate_all


@pytest.fixture
def proxied(pg_conninfo: str) -> Iterator[tuple[PostgresDatabase, TcpProxy]]:
    """The session's database, emptied, reached through a proxy, with short timeouts."""
    with psycopg.connect(pg_conninfo, autocommit=True) as connection:
        truncate_all(connection)
    params = psycopg.conninfo.conninfo_to_dict(pg_conninfo)
    upstream = (str(params.get("host") or "127.0.0.1"), int(str(params.get("port") or 5432)))
    with TcpProxy(upstream) as proxy:
        conninfo = psycopg.conninfo.make_conninfo(pg_conninfo, host="127.0.0.1", port=proxy.port)
        with PostgresDatabase.from_url(
            conninfo, statement_timeout=0.5, timeout=1.0, connect_timeout=2, max_size=4
        ) as database:
            yield database, proxy


def test_a_lone_create_is_a_batch_of_one(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creates one after another each run alone, and each is written."""
    scene = new_scene(postgres_database)
    batch_sizes = count_batches(postgres_database, monkeypatch)

    async def one_by_one() -> list[bool]:
        return [await scene.create() for _ in range(5)]

    assert asyncio.run(one_by_one()) == [True] * 5
    assert batch_sizes == [1] * 5
    assert scene.stored() == (5, 5, 5)


def test_lost_connections_cost_no_create(proxied: tuple[PostgresDatabase, TcpProxy]) -> None:
    """Every pooled connection dies (a restart) under twenty creates at once: the batch
    finds its connection dead, each create is retried on its own, and all are written
    once."""
    database, proxy = proxied
    scene = new_scene(database)

    async def after_a_restart() -> list[bool]:
        await scene.create()  # the pool of this loop is up
        proxy.cut()
        async with asyncio.timeout(30):
            return await asyncio.gather(*(scene.create() for _ in range(20)))

    assert asyncio.run(after_a_restart()) == [True] * 20
    assert scene.stored() == (21, 21, 21)


def test_a_paused_database_fails_every_waiting_create_at_one_deadline(
    proxied: tuple[PostgresDatabase, TcpProxy],
) -> None:
    """The database stops answering under ten creates at once: all ten are unavailable
    after one statement deadline (not one per batch), and creates work again once it
    answers, with counter, list and events in agreement."""
    database, proxy = proxied
    scene = new_scene(database)

    async def paused() -> tuple[list[bool | BaseException], float]:
        await scene.create()
        proxy.pause()
        started = time.monotonic()
        try:
            outcomes = await asyncio.gather(
                *(scene.create() for _ in range(10)), return_exceptions=True
            )
        finally:
            proxy.resume()
        elapsed = time.monotonic() - started
        outcomes.append(await scene.create())
        return outcomes, elapsed

    outcomes, elapsed = asyncio.run(paused())
    assert all(isinstance(o, UpstreamUnavailableError) for o in outcomes[:10])
    assert outcomes[10] is True
    assert elapsed < database.statement_deadline + 1.0
    counted, listed, events = scene.stored()
    assert counted == listed == events >= 2


def test_two_batches_of_two_workspaces_never_deadlock(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two full batches of two workspaces' creates (arrived in opposite orders) start at
    the same moment: the second waits for the first's locks where both lock a row, neither
    fails (a failed batch's creates would run on their own), every create is written once
    and both counters are exact. (That a batch takes its workspaces in one order is
    ``test_group_commit_batches``'s.)"""
    scenes = [new_scene(postgres_database), new_scene(postgres_database)]
    ran_alone: list[bool] = []
    write_alone_now = postgres.PostgresTransaction._write_alone_now

    async def alone(self: postgres.PostgresTransaction, *args: Any) -> Any:
        ran_alone.append(True)
        return await write_alone_now(self, *args)

    monkeypatch.setattr(postgres.PostgresTransaction, "_write_alone_now", alone)
    run_batch = postgres_transaction.run_batch
    full_batches: list[asyncio.Event] = []

    async def together(database: PostgresDatabase, statements: Sequence[Statement]) -> Any:
        """Full batches wait for each other, then run at once."""
        if len(statements) == MAX_BATCH:
            arrived = asyncio.Event()
            full_batches.append(arrived)
            arrived.set()
            for other in full_batches:
                await other.wait()
            while len(full_batches) < 2:
                await asyncio.sleep(0.001)
        return await run_batch(database, statements)

    monkeypatch.setattr(postgres_transaction, "run_batch", together)
    one, other = scenes
    # Two lone batches, then two full ones: the first as it arrived meets ``one`` first,
    # the second ``other`` first.
    arrivals = [one, other, *[one, other] * (MAX_BATCH // 2), *[other, one] * (MAX_BATCH // 2)]

    async def interleaved() -> list[bool]:
        async with asyncio.timeout(30):
            return await asyncio.gather(*(scene.create() for scene in arrivals))

    assert asyncio.run(interleaved()) == [True] * len(arrivals)
    assert len(full_batches) == 2
    assert ran_alone == []
    each = len(arrivals) // 2
    assert [scene.stored() for scene in scenes] == [(each, each, each)] * 2
