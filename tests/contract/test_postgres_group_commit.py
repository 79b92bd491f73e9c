"""PostgreSQL's group commit of a session's creates (``postgres_group_commit``): concurrent
creates share transactions, and each still answers exactly what it would alone: created
and durable, refused (quota, a taken name) and not written, or unavailable when the
database is out of reach, within one statement deadline."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from contract_proxy import TcpProxy
from create_scene import new_scene

from strongroom.adapters.sql import postgres
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.postgres_group_commit import Statement
from strongroom.adapters.sql.rows import Row
from strongroom.domain.errors import NameTakenError, UpstreamUnavailableError
from support.postgres import truncate_all


@pytest.fixture
def batch_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every batch run (a lone statement is a batch of 1)."""
    sizes: list[int] = []
    run_batch = postgres._run_batch

    async def counted(database: PostgresDatabase, statements: Sequence[Statement]) -> Any:
        sizes.append(len(statements))
        rows: list[Row | None] = await run_batch(database, statements)
        return rows

    monkeypatch.setattr(postgres, "_run_batch", counted)
    return sizes


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


def test_concurrent_creates_fill_the_quota_exactly_in_fewer_commits(
    postgres_database: PostgresDatabase, batch_sizes: list[int]
) -> None:
    """60 creates at once against a limit of 10: exactly 10 are created (counter, list
    and events agree), in fewer transactions than 60, some of them shared."""
    scene = new_scene(postgres_database, limit=10)

    async def all_at_once() -> list[bool]:
        return await asyncio.gather(*(scene.create() for _ in range(60)))

    created = asyncio.run(all_at_once())
    assert created.count(True) == 10
    assert scene.stored() == (10, 10, 10)
    assert sum(batch_sizes) == 60
    assert len(batch_sizes) < 60


def test_a_lone_create_is_a_batch_of_one(
    postgres_database: PostgresDatabase, batch_sizes: list[int]
) -> None:
    """Creates one after another each run alone, and each is written."""
    scene = new_scene(postgres_database)

    async def one_by_one() -> list[bool]:
        return [await scene.create() for _ in range(5)]

    assert asyncio.run(one_by_one()) == [True] * 5
    assert batch_sizes == [1] * 5
    assert scene.stored() == (5, 5, 5)


def test_a_taken_name_refuses_its_own_create_only(postgres_database: PostgresDatabase) -> None:
    """Ten names, each asked for twice at once: the batch that holds both fails as a whole,
    each create then runs alone, and one create of each name is refused with
    NameTakenError while the other ten are written with their events."""
    scene = new_scene(postgres_database)

    async def all_at_once() -> list[bool | BaseException]:
        creates = [scene.create(f"name {n % 10}") for n in range(20)]
        return await asyncio.gather(*creates, return_exceptions=True)

    outcomes = asyncio.run(all_at_once())
    assert outcomes.count(True) == 10
    assert sum(isinstance(o, NameTakenError) for o in outcomes) == 10
    assert scene.stored() == (10, 10, 10)


def test_cancelled_callers_hold_up_nobody(postgres_database: PostgresDatabase) -> None:
    """A third of 45 creates are cancelled while they wait: every other one is created,
    what was written is counted exactly, and the next create goes through."""
    scene = new_scene(postgres_database)

    async def with_cancellations() -> list[bool | BaseException]:
        tasks = [asyncio.ensure_future(scene.create()) for _ in range(45)]
        await asyncio.sleep(0)
        for task in tasks[::3]:
            task.cancel()
        async with asyncio.timeout(30):
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        outcomes.append(await scene.create())
        return outcomes

    outcomes = asyncio.run(with_cancellations())
    kept = [o for n, o in enumerate(outcomes) if n % 3 or n == 45]
    assert all(o is True for o in kept)
    counted, listed, events = scene.stored()
    assert counted == listed == events
    assert len(kept) <= counted <= len(outcomes)


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


def test_creates_from_two_event_loops_are_all_written(
    postgres_database: PostgresDatabase,
) -> None:
    """Two threads, each with its own loop (a server beside a blocking facade), create at
    once: each loop batches its own creates, and every one is written."""
    scene = new_scene(postgres_database)
    results: list[list[bool]] = []

    def one_loop() -> None:
        async def twenty() -> list[bool]:
            return await asyncio.gather(*(scene.create() for _ in range(20)))

        results.append(asyncio.run(twenty()))

    threads = [threading.Thread(target=one_loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [[True] * 20, [True] * 20]
    assert scene.stored() == (40, 40, 40)
