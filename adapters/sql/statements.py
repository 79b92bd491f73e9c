"""What every SQL repository runs on: ``Statements`` (the statements of one unit of work,
in one dialect) and the helpers the repositories share.

Reads that come before a unit of work's first write or lock run on their own (autocommit,
one round trip each); the first statement that writes or locks opens the transaction that
every later statement of the unit joins. In PostgreSQL's READ COMMITTED each statement sees
a fresh snapshot anyway, so this changes no result; it saves two round trips on every
read-only unit of work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.domain.pagination import PageRequest
from strongroom.ports.driven.repositories import (
    IntegrityViolationError,
)

# ``rows``: every row as a tuple, in the statement's column order (long reads: no dict per
# row; on PostgreSQL in the binary format).
Fetch = Literal["one", "all", "rows", "count"]


# One statement of ``Statements.write_all``: the query, its parameters, what it answers.
Step = tuple[Q, Params, Fetch]


class Statements(Protocol):
    """The statements of one unit of work, in one dialect.

    Driver errors come out translated: refusals (``NameTakenError``...),
    ``IntegrityViolationError`` for other constraints, ``UpstreamUnavailableError`` when the
    database does not answer.
    """

    codec: Codec

    @property
    def in_transaction(self) -> bool:
        """Whether the unit has written or locked already (its transaction is open)."""
        ...

    async def fetch_one(
        self, query: Q, params: Params, *, filters: Sequence[Q] = (), writes: bool = False
    ) -> Row | None:
        """The first row of ``query``; ``writes`` when it writes or locks rows (a locking
        read's ``/*lock*/`` marker then becomes the dialect's row lock)."""
        ...

    async def fetch_alone(
        self, query: Q, params: Params, *, filters: Sequence[Q] = ()
    ) -> Row | None:
        """``fetch_one`` of a read after which the unit runs no other statement (a joined
        look-up answered as it is): the connection may be released at once."""
        ...

    async def fetch_all(self, query: Q, params: Params, *, filters: Sequence[Q] = ()) -> list[Row]:
        """Every row of a read."""
        ...

    async def fetch_rows(self, query: Q, params: Params) -> list[tuple[Any, ...]]:
        """Every row of a read as a tuple, in the statement's column order: for reads of
        thousands of rows (retention reads a backup's whole history)."""
        ...

    async def execute(self, query: Q, params: Params) -> int:
        """Run a write; the number of rows it changed."""
        ...

    async def write_all(self, steps: Sequence[Step]) -> list[Any]:
        """Run ``steps`` in order inside the write transaction: for each, its first row,
        every row or the number of rows it changed, as its ``Fetch`` says.

        On PostgreSQL they go in one pipeline (with ``BEGIN`` when the unit has not written
        yet): one round trip. The commit stays the unit's own, a round trip of its own, so
        a connection lost before it commits nothing.
        """
        ...

    async def write_alone(self, query: Q, params: Params) -> Row | None:
        """Run ``query`` as a transaction of its own, committed before it returns, as the
        unit's first statement; the first row of its last statement.

        On PostgreSQL it is one statement (data-modifying CTEs) run in autocommit, which
        also writes its commit's deadline (its ``commit_by`` parameter, given by the
        adapter): one round trip, its locks held only while it runs and commits.
        On SQLite the text may be a script of several statements, run between ``BEGIN
        IMMEDIATE`` and ``COMMIT`` in one hop to a thread. It may be retried after a lost
        connection, so it must be written to do nothing twice.
        """
        ...


def require(present: bool, what: str) -> None:
    if not present:
        raise IntegrityViolationError(what)


def page_params(page: PageRequest, codec: Codec) -> tuple[Params, bool]:
    """``limit`` (one more than shown, to see whether a next page exists) and the cursor."""
    params: Params = {"limit": page.limit + 1}
    if page.after is None:
        return params, False
    params["after_created_at"] = codec.timestamp(page.after.created_at)
    params["after_id"] = codec.uuid(page.after.id)
    return params, True


def count_of(row: Row | None) -> int:
    return 0 if row is None else int(row["n"])


class SqlRepository:
    def __init__(self, statements: Statements) -> None:
        self._db = statements
        self._codec = statements.codec
