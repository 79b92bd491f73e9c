"""A COMMIT reached after its deadline rolls back (contract section 13; migration 0020,
``postgres_transaction._commit_guarded``).

The check is made inside the COMMIT, by the deferred trigger on ``commit_deadlines``: a
server that stalls anywhere before it, even after running every statement the client sent
ahead of the COMMIT, commits nothing the client may have answered 502. The first tests
send the adapter's own deadline statement in one pipeline, as the adapter does, with a
stall where a paused server would stop; the last ones create backups as a session's
create does (``write_alone``), whose statement writes its deadline itself.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from create_scene import count_batches, new_scene

from strongroom.adapters.sql import postgres_transaction
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.postgres_transaction import COMMIT_DEADLINE, translate
from strongroom.domain.errors import UpstreamUnavailableError


def _commit(conninfo: str, *, deadline_in: float, stall: float) -> tuple[int, Exception | None]:
    """Write a row to a table of the session, then the deadline ``deadline_in`` seconds
    from now, a stall of ``stall`` seconds, and COMMIT, in one pipeline: the rows the table
    holds afterwards, and the COMMIT's error."""
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute("CREATE TEMPORARY TABLE written (n integer)")
        commit_by = datetime.now(UTC) + timedelta(seconds=deadline_in)
        failed: Exception | None = None
        try:
            with connection.pipeline():
                connection.execute("BEGIN")
                connection.execute("INSERT INTO written VALUES (1)")
                connection.execute(COMMIT_DEADLINE, (commit_by,), prepare=False)
                connection.execute("SELECT pg_sleep(%s)", (stall,))
                connection.execute("COMMIT")
        except psycopg.Error as error:
            failed = error
        row = connection.execute("SELECT count(*) FROM written").fetchone()
        assert row is not None
        return row[0], failed


def test_a_commit_reached_after_its_deadline_writes_nothing(pg_conninfo: str) -> None:
    """The deadline passes between its own statement and the COMMIT (where a guard ahead
    of the COMMIT had already passed): the COMMIT fails as a database out of reach, and
    the write is not there."""
    rows, failed = _commit(pg_conninfo, deadline_in=0.2, stall=0.5)
    assert isinstance(failed, psycopg.errors.QueryCanceled)
    assert "commit deadline passed" in str(failed)
    assert isinstance(translate(failed, {}), UpstreamUnavailableError)
    assert rows == 0


def test_a_commit_reached_in_time_writes(pg_conninfo: str) -> None:
    """The same transaction reaching its COMMIT before the deadline commits."""
    assert _commit(pg_conninfo, deadline_in=30.0, stall=0.0) == (1, None)


def test_a_passed_deadline_fails_only_its_own_commit(pg_conninfo: str) -> None:
    """A connection's row is rewritten by each commit: after a commit failed at its
    deadline, the next one on the same connection, in time, commits."""
    with psycopg.connect(pg_conninfo, autocommit=True) as connection:
        connection.execute("CREATE TEMPORARY TABLE written (n integer)")
        for n, deadline_in in enumerate((-1.0, 30.0, -1.0, 30.0)):
            late = deadline_in < 0
            commit_by = datetime.now(UTC) + timedelta(seconds=deadline_in)
            with (
                pytest.raises(psycopg.errors.QueryCanceled) if late else nullcontext(),
                connection.pipeline(),
            ):
                connection.execute("BEGIN")
                connection.execute("INSERT INTO written VALUES (%s)", (n,))
                connection.execute(COMMIT_DEADLINE, (commit_by,), prepare=False)
                connection.execute("COMMIT")
        written = connection.execute("SELECT n FROM written ORDER BY n").fetchall()
    assert written == [(1,), (3,)]


def test_a_lone_create_checks_its_own_deadline(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create that runs alone is one statement in autocommit, carrying its deadline: its
    own commit checks it. Past it, the create fails as a database out of reach and writes
    nothing (backup, event or count)."""
    scene = new_scene(postgres_database)
    batch_sizes = count_batches(postgres_database, monkeypatch)
    monkeypatch.setattr(postgres_transaction, "COMMIT_MARGIN", 3600.0)  # due at once
    with pytest.raises(UpstreamUnavailableError):
        asyncio.run(scene.create())
    assert batch_sizes == [1]
    assert scene.stored() == (0, 0, 0)


def test_a_batch_of_creates_checks_its_deadline(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creates committed together carry their transaction's deadline in the first of them:
    past it, none is written, and neither is any when each runs again alone."""
    scene = new_scene(postgres_database)
    batch_sizes = count_batches(postgres_database, monkeypatch)
    monkeypatch.setattr(postgres_transaction, "COMMIT_MARGIN", 3600.0)

    async def together() -> list[bool | BaseException]:
        return await asyncio.gather(*(scene.create() for _ in range(10)), return_exceptions=True)

    answers = asyncio.run(together())
    assert all(isinstance(answer, UpstreamUnavailableError) for answer in answers)
    assert max(batch_sizes) > 1
    assert scene.stored() == (0, 0, 0)


def test_creates_in_time_are_written_alone_and_together(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same creates before their deadline: each written once, alone or in a batch."""
    scene = new_scene(postgres_database)
    batch_sizes = count_batches(postgres_database, monkeypatch)

    async def alone_then_together() -> list[bool]:
        first = await scene.create()
        return [first, *await asyncio.gather(*(scene.create() for _ in range(10)))]

    assert asyncio.run(alone_then_together()) == [True] * 11
    assert batch_sizes[0] == 1
    assert max(batch_sizes) > 1
    assert scene.stored() == (11, 11, 11)
