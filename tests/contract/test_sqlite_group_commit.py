"""SQLite's group commit of a session's creates (``GroupCommit``): concurrent creates share
transactions, and each still answers exactly what it would alone: created and durable,
refused (quota, a taken name) and not written, or unavailable when the writer stays taken.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from create_scene import new_scene

from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.errors import NameTakenError, UpstreamUnavailableError


def _counting_batches(database: SqliteDatabase, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the jobs handed to the database's threads (one per batch)."""
    jobs: list[int] = []
    submit = database.submit

    def counted(work: Callable[[], Any]) -> Any:
        jobs.append(1)
        return submit(work)

    monkeypatch.setattr(database, "submit", counted)
    return jobs


def test_concurrent_creates_fill_the_quota_exactly_in_fewer_commits(
    sqlite_database: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 creates at once against a limit of 10: exactly 10 are created (counter, list
    and events agree), and the 60 scripts took fewer transactions than 60."""
    scene = new_scene(sqlite_database, limit=10)
    jobs = _counting_batches(sqlite_database, monkeypatch)

    async def all_at_once() -> list[bool]:
        return await asyncio.gather(*(scene.create() for _ in range(60)))

    created = asyncio.run(all_at_once())
    assert created.count(True) == 10
    assert scene.stored() == (10, 10, 10)
    assert len(jobs) < 60


def test_a_taken_name_refuses_its_own_script_only(sqlite_database: SqliteDatabase) -> None:
    """Ten names, each asked for twice at once: one create of each is refused with
    NameTakenError, the other ten are written with their events."""
    scene = new_scene(sqlite_database)

    async def all_at_once() -> list[bool | BaseException]:
        creates = [scene.create(f"name {n % 10}") for n in range(20)]
        return await asyncio.gather(*creates, return_exceptions=True)

    outcomes = asyncio.run(all_at_once())
    assert outcomes.count(True) == 10
    assert sum(isinstance(o, NameTakenError) for o in outcomes) == 10
    assert scene.stored() == (10, 10, 10)


def test_cancelled_callers_hold_up_nobody(sqlite_database: SqliteDatabase) -> None:
    """A third of 45 creates are cancelled while they wait: every other one is created
    (none waits forever for a lead that a cancelled caller held), what was written is
    counted exactly, and the next create goes through."""
    scene = new_scene(sqlite_database)

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


def test_a_held_write_lock_fails_waiting_creates_in_time_then_they_recover(
    sqlite_database: SqliteDatabase,
) -> None:
    """Another process holds SQLite's write lock: ten creates at once answer unavailable
    within seconds and write nothing; once it lets go, creates go through again."""
    impatient = SqliteDatabase(sqlite_database.path, busy_timeout=0.3)
    scene = attrs.evolve(new_scene(sqlite_database), database=impatient)
    blocker = sqlite3.connect(sqlite_database.path, isolation_level=None)

    async def all_at_once() -> list[bool | BaseException]:
        async with asyncio.timeout(5):
            return await asyncio.gather(
                *(scene.create() for _ in range(10)), return_exceptions=True
            )

    try:
        blocker.execute("BEGIN IMMEDIATE")
        refused = asyncio.run(all_at_once())
        blocker.execute("ROLLBACK")
        assert all(isinstance(o, UpstreamUnavailableError) for o in refused)
        assert scene.stored() == (0, 0, 0)
        assert asyncio.run(all_at_once()) == [True] * 10
        assert scene.stored() == (10, 10, 10)
    finally:
        blocker.close()
        impatient.close()


def test_creates_from_two_event_loops_are_all_written(sqlite_database: SqliteDatabase) -> None:
    """Two threads, each with its own loop, create at once (a server beside a blocking
    facade): batches mix their scripts and each caller hears back on its own loop."""
    scene = new_scene(sqlite_database)
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
