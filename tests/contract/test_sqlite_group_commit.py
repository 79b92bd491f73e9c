"""SQLite's group commit (``GroupCommit``), what only it does: a write lock held by
another process fails the waiting creates within the busy timeout. Its behaviour shared
with PostgreSQL's is tested in ``test_group_commit``."""

from __future__ import annotations

import asyncio
import sqlite3

import attrs
from create_scene import new_scene

from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.domain.errors import UpstreamUnavailableError


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
