"""Group commit: SQLite's transactions of one script (``write_alone``), committed together.

SQLite has one writer, and a create (``backup_create_counted``) is a
transaction of its own that ends in an fsync. Committed one at a time, each create paid
for the writer's handover, two hops between the event loop and a thread and its own fsync
while every other create waited. Now the scripts that arrive while a batch runs wait for
the next one: one ``BEGIN IMMEDIATE``, each script in a savepoint of its own (a script
refused by a constraint is rolled back alone and answers its error), one ``COMMIT``.
No caller is answered before its batch has committed, so an answer means what it meant
before: written and durable, or refused and not written. If the batch as a whole fails
(``COMMIT``, or an error that is not a constraint's), every script in it answers that
error and none is written.

Who runs a batch: the caller that finds none being gathered leads. It takes the database's
writer, then every script waiting (up to ``MAX_BATCH``, its own first), and hands them to a
thread. That thread answers each script of the batch, lets the writer go, and passes the
lead to the oldest script still waiting (whose caller wakes up on its own loop and leads),
or ends it. Callers may be on different event loops and threads, as for the writer itself.
A caller cancelled before its script was taken is dropped (nothing is written); once
taken, the script runs and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from strongroom.adapters.concurrency import AnyLoopLock
from strongroom.adapters.sql.errors import DATABASE_UNAVAILABLE
from strongroom.adapters.sql.rows import Params, Row
from strongroom.domain.errors import UpstreamUnavailableError

T = TypeVar("T")


class Writer(Protocol):
    """What a group commit takes from its ``SqliteDatabase``: the one writer's lock, how
    long to wait for it, its connections and its threads."""

    @property
    def busy_timeout(self) -> float:
        """How long a writer waits for the lock, in seconds."""
        ...

    @property
    def writer(self) -> AnyLoopLock:
        """The database's one writer."""
        ...

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """Run ``work`` on one of the database's threads."""
        ...

    def acquire(self) -> sqlite3.Connection:
        """A connection of the database (on its thread)."""
        ...

    def release(self, connection: sqlite3.Connection, *, reusable: bool) -> None:
        """Give a connection back (closed unless ``reusable``)."""
        ...


# How many scripts one batch takes at most (each waits for the batch's one commit).
MAX_BATCH = 64

# What a waiting caller is told: its answer (a row, or an error to raise), or to lead.
_LEAD = "lead"
_DONE = "done"
_FAILED = "failed"


@dataclass(eq=False)
class _Script:
    statements: Sequence[str]
    params: Params
    loop: asyncio.AbstractEventLoop
    signal: asyncio.Future[tuple[str, Any]]
    leads: bool = False  # told to lead, and has not started to


def _tell(script: _Script, kind: str, value: Any) -> bool:
    """Signal ``script``'s caller on its own loop; False if that loop is gone."""
    try:
        script.loop.call_soon_threadsafe(_settle, script.signal, (kind, value))
    except RuntimeError:  # the loop is closed: nobody waits for this script any more
        return False
    return True


def _settle(signal: asyncio.Future[tuple[str, Any]], outcome: tuple[str, Any]) -> None:
    if not signal.done():
        signal.set_result(outcome)


class GroupCommit:
    """The scripts of concurrent ``write_alone`` calls of one database, in shared commits."""

    def __init__(
        self,
        database: Writer,
        translate: Callable[[sqlite3.Error, Params], Exception],
    ) -> None:
        self._database = database
        self._translate = translate
        self._guard = threading.Lock()
        self._waiting: deque[_Script] = deque()
        self._leading = False  # a batch is being gathered or run

    async def run(self, statements: Sequence[str], params: Params) -> Row | None:
        """Run ``statements`` (a script) in the next batch; the first row of the last one."""
        loop = asyncio.get_running_loop()
        script = _Script(statements, params, loop, loop.create_future())
        with self._guard:
            self._waiting.append(script)
            lead, self._leading = not self._leading, True
        if lead:
            await self._lead(script)
        while True:
            try:
                kind, value = await script.signal
            except BaseException:
                self._abandon(script)
                raise
            if kind == _DONE:
                found: Row | None = value
                return found
            if kind == _FAILED:
                raise value
            # Told to lead: a fresh signal for the answer, then gather the next batch.
            script.signal = loop.create_future()
            await self._lead(script)

    def _abandon(self, script: _Script) -> None:
        """A caller cancelled while it waited: drop its script if not taken yet, and pass
        the lead on if it had been given to it."""
        with self._guard:
            if script in self._waiting:
                self._waiting.remove(script)
            if script.leads:
                script.leads = False
                self._pass_lead_locked()

    async def _lead(self, script: _Script) -> None:
        """Take the writer and the waiting scripts, and hand them to a thread."""
        script.leads = False
        database = self._database
        try:
            async with asyncio.timeout(database.busy_timeout):
                await database.writer.acquire()
        except TimeoutError:
            self._fail_waiting()
            return
        except BaseException:
            with self._guard:
                if script in self._waiting:
                    self._waiting.remove(script)
                self._pass_lead_locked()
            raise
        with self._guard:
            batch = [self._waiting.popleft() for _ in range(min(MAX_BATCH, len(self._waiting)))]
        try:
            database.submit(lambda: self._run_batch(batch))
        except RuntimeError as closed:  # the database is closed: nothing runs any more
            self._answer(batch, [(_FAILED, closed)] * len(batch))
            self._finish_batch()

    def _fail_waiting(self) -> None:
        """The writer stayed taken for the whole busy timeout: every waiting script gives
        up (each would wait for the same writer) and nobody leads."""
        with self._guard:
            waiting, self._waiting = list(self._waiting), deque()
            self._leading = False
        unavailable = [UpstreamUnavailableError(DATABASE_UNAVAILABLE) for _ in waiting]
        self._answer(waiting, [(_FAILED, error) for error in unavailable])

    def _run_batch(self, batch: list[_Script]) -> None:
        """On a database thread: the batch in one transaction, then its answers, the
        writer and the lead passed on, whatever happens."""
        outcomes: list[tuple[str, Any]] = []
        try:
            outcomes = self._transaction(batch)
        except BaseException as error:  # every caller must be answered
            outcomes = [(_FAILED, error)] * len(batch)
        finally:
            self._answer(batch, outcomes)
            self._finish_batch()

    def _transaction(self, batch: list[_Script]) -> list[tuple[str, Any]]:
        database = self._database
        connection = database.acquire()
        reusable = True
        try:
            connection.execute("BEGIN IMMEDIATE")
            outcomes = [self._one(connection, script) for script in batch]
            connection.execute("COMMIT")
            return outcomes
        except sqlite3.Error as error:
            reusable = False
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            return [(_FAILED, self._translate(error, script.params)) for script in batch]
        finally:
            database.release(connection, reusable=reusable)

    def _one(self, connection: sqlite3.Connection, script: _Script) -> tuple[str, Any]:
        """One script in a savepoint: its last statement's first row, or a constraint's
        refusal (rolled back to the savepoint; the batch goes on). Any other error ends the
        batch."""
        *leading, last = script.statements
        connection.execute("SAVEPOINT script")
        try:
            for text in leading:  # their rows are not read
                connection.execute(text, script.params).close()
            cursor = connection.cursor()
            cursor.row_factory = None
            try:
                cursor.execute(last, script.params)
                row = cursor.fetchone()
                names = [column[0] for column in cursor.description or ()]
            finally:
                cursor.close()
        except sqlite3.IntegrityError as refused:
            connection.execute("ROLLBACK TO script")
            connection.execute("RELEASE script")
            return (_FAILED, self._translate(refused, script.params))
        connection.execute("RELEASE script")
        return (_DONE, None if row is None else dict(zip(names, row, strict=True)))

    def _answer(self, scripts: list[_Script], outcomes: list[tuple[str, Any]]) -> None:
        """Each script's outcome to its caller (every script is answered once: it leaves
        the waiting queue for one batch, or for ``_fail_waiting``)."""
        for script, (kind, value) in zip(scripts, outcomes, strict=True):
            _tell(script, kind, value)

    def _finish_batch(self) -> None:
        """Let the writer go and pass the lead on (or end it)."""
        self._database.writer.release()
        with self._guard:
            self._pass_lead_locked()

    def _pass_lead_locked(self) -> None:
        """The oldest waiting script whose loop still runs leads next; nobody, if none."""
        while self._waiting:
            script = self._waiting[0]
            script.leads = True
            if _tell(script, _LEAD, None):
                return
            script.leads = False
            self._waiting.popleft()  # its loop is closed: nobody waits for it
        self._leading = False
