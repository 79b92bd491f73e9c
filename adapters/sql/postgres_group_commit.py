"""Group commit on PostgreSQL: concurrent ``write_alone`` statements of one event loop,
run in one transaction with one commit.

A create (``backup_create_counted``) is one statement committed on its own.
Under load every create paid for its own commit (a WAL flush) and each waited for the
workspace row's lock held by the one before it until that commit, then checked the row
again. Now the statements that arrive while a batch runs wait for the next batch: one
pipeline of ``BEGIN``, the statements in arrival order and ``COMMIT``, on one connection
(one round trip, one commit, the lock taken once). Each statement still sees the ones
before it (the usage counter, a name just taken), so a batch decides exactly what the same
statements one after another would.

A lone statement runs alone, in autocommit: one statement, which writes its commit's
deadline itself, so that no write answered 502 commits (``postgres_transaction.run_batch``,
migration 0020). A batch that
fails as a whole (a name taken twice aborts the transaction, a connection lost) is written
by none of its statements; each caller then runs its statement on its own, as without group
commit (``RunAlone``), so a refusal reaches only its own caller. When the database is out of
reach (no connection, or no answer by the deadline) that error answers the batch and every
statement waiting for the next one (``FailWaiting``): each would only wait for it again.

Two batches run at a time per event loop (per pool): while one commits, the next is sent.
psycopg's pipeline returns to the event loop after each statement it sends, so a batch
takes a turn of a busy loop per statement; with one batch at a time, the statements that
arrived meanwhile made the next batch larger and slower still, and at half the maximum
rate a slow commit grew into a queue of 100-150 ms. A batch takes its statements in the
order of the workspaces they lock (``order``; arrival order within one workspace), so two
batches take workspace rows in the same order and cannot deadlock; the second waits for
the first's commit only where both lock a row. No caller is answered before its batch has
committed. A caller cancelled before its batch
starts is dropped; once its batch has started, the batch runs on (in a task of its own)
and only its answer is dropped. When the loop ends, the running batch is cancelled and
every waiting caller with it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from strongroom.adapters.sql.rows import Params, Row

# How many statements one batch takes at most (each waits for the batch's one commit).
MAX_BATCH = 64
# How many batches of one event loop run at once (one commits while the next is sent).
MAX_RUNNING = 2

Statement = tuple[bytes, Params]
BatchRunner = Callable[[Sequence[Statement]], Awaitable[list[Row | None]]]
LockOrder = Callable[[Statement], str]
RunOwn = Callable[[bool], Awaitable[Row | None]]


class RunAlone(Exception):  # noqa: N818 (an instruction, not an error)
    """The batch wrote nothing: each caller is to run its statement on its own.
    ``after_lost_connection``: the batch's connection was lost, and the batch may have
    run on the server (the retry waits for locks only briefly; see ``write_alone``)."""

    def __init__(self, *, after_lost_connection: bool) -> None:
        super().__init__("run alone")
        self.after_lost_connection = after_lost_connection


class FailWaiting(Exception):  # noqa: N818 (an instruction, not an error)
    """``error`` answers the batch and every statement waiting for the next one (the
    database is out of reach: each would only wait for it again)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(eq=False)
class _Waiting:
    statement: Statement
    answer: asyncio.Future[Row | None]


class GroupCommit:
    """The ``write_alone`` statements of one event loop, in shared commits."""

    def __init__(self, run_batch: BatchRunner, order: LockOrder) -> None:
        """``run_batch`` runs statements as one transaction (one alone, too):
        their first rows, or raises ``RunAlone``, ``FailWaiting`` or the error that
        answers them all. ``order`` is the key of the row a statement locks first (its
        workspace): a batch runs its statements in that order."""
        self._run_batch = run_batch
        self._order = order
        self._waiting: deque[_Waiting] = deque()
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, statement: Statement, run_own: RunOwn) -> Row | None:
        """``statement`` in the next batch; its first row. ``run_own(retry)`` runs it on
        the caller's own if its batch failed as a whole."""
        waiting = _Waiting(statement, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        if len(self._running) < MAX_RUNNING:
            self._start_next()
        try:
            return await waiting.answer
        except RunAlone as failed:
            return await run_own(failed.after_lost_connection)
        except asyncio.CancelledError:
            if waiting in self._waiting:  # not taken yet: nothing of it runs
                self._waiting.remove(waiting)
            raise

    def _start_next(self) -> None:
        count = min(MAX_BATCH, len(self._waiting))
        batch = [self._waiting.popleft() for _ in range(count)]
        task = asyncio.get_running_loop().create_task(
            self._batch(batch), name="strongroom-group-commit"
        )
        self._running.add(task)

    async def _batch(self, batch: list[_Waiting]) -> None:
        """Run ``batch``, answer each of its callers, then start the next batch, if any."""
        try:
            # Here, not where the batch is taken: a failing key answers its callers.
            batch.sort(key=lambda waiting: self._order(waiting.statement))  # stable
            rows = await self._run_batch([waiting.statement for waiting in batch])
        except FailWaiting as unreachable:
            for waiting in [*batch, *self._waiting]:
                _settle(waiting.answer, error=unreachable.error)
            self._waiting.clear()
        except Exception as error:
            for waiting in batch:
                _settle(waiting.answer, error=error)
        except BaseException:  # cancelled: the loop ends, and every wait with it
            for waiting in [*batch, *self._waiting]:
                waiting.answer.cancel()
            self._waiting.clear()
            raise
        else:
            for waiting, row in zip(batch, rows, strict=True):
                _settle(waiting.answer, row=row)
        finally:
            current = asyncio.current_task()
            assert current is not None
            self._running.discard(current)
        if self._waiting and len(self._running) < MAX_RUNNING:
            self._start_next()


def _settle(
    answer: asyncio.Future[Row | None], *, row: Row | None = None, error: Exception | None = None
) -> None:
    if answer.done():  # its caller was cancelled
        return
    if error is None:
        answer.set_result(row)
    else:
        answer.set_exception(error)
