"""Group commit of a session's creates, on both SQL databases (SQLite's ``GroupCommit``,
PostgreSQL's ``postgres_group_commit``): concurrent creates share transactions, and each
still answers exactly what it would alone: created and durable, or refused (quota, a
taken name) and not written. What only one database does is tested beside it
(``test_sqlite_group_commit``, ``test_postgres_group_commit``)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from create_scene import count_batches, new_scene

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.errors import NameTakenError

Database = SqliteDatabase | PostgresDatabase


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest) -> Database:
    """Each SQL database in turn, empty."""
    found: Database = request.getfixturevalue(f"{request.param}_database")
    return found


def test_concurrent_creates_fill_the_quota_exactly_in_fewer_commits(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 creates at once against a limit of 10: exactly 10 are created (counter, list
    and events agree), and the 60 took fewer transactions than 60."""
    scene = new_scene(database, limit=10)
    batches = count_batches(database, monkeypatch)

    async def all_at_once() -> list[bool]:
        return await asyncio.gather(*(scene.create() for _ in range(60)))

    created = asyncio.run(all_at_once())
    assert created.count(True) == 10
    assert scene.stored() == (10, 10, 10)
    assert len(batches) < 60


def test_a_taken_name_refuses_its_own_create_only(database: Database) -> None:
    """Ten names, each asked for twice at once: one create of each is refused with
    NameTakenError, the other ten are written with their events."""
    scene = new_scene(database)

    async def all_at_once() -> list[bool | BaseException]:
        creates = [scene.create(f"name {n % 10}") for n in range(20)]
        return await asyncio.gather(*creates, return_exceptions=True)

    outcomes = asyncio.run(all_at_once())
    assert outcomes.count(True) == 10
    assert sum(isinstance(o, NameTakenError) for o in outcomes) == 10
    assert scene.stored() == (10, 10, 10)


def test_cancelled_callers_hold_up_nobody(database: Database) -> None:
    """A third of 45 creates are cancelled while they wait: every other one is created
    (none waits forever for a batch or a lead a cancelled caller held), what was written
    is counted exactly, and the next create goes through."""
    scene = new_scene(database)

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


def test_creates_from_two_event_loops_are_all_written(database: Database) -> None:
    """Two threads, each with its own loop (a server beside a blocking facade), create at
    once: each caller hears back on its own loop, and every create is written."""
    scene = new_scene(database)
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
