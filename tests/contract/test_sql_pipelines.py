"""PostgreSQL pipelines after a refusal: a statement refused inside a pipeline leaves the
connection as good as before, for every later request that borrows it.

psycopg prepares a statement on its execution after ``prepare_threshold`` (5) and records
the name before the server has answered. Inside a pipeline, the statements queued behind a
refused one are never run (``PIPELINE_ABORTED``), their ``PREPARE`` included, yet psycopg
3.3 keeps the name: every later execution of that statement on that connection failed
with ``prepared statement "_pg3_N" does not exist`` (a 500 to whoever borrowed it next).
One pooled connection here, so every unit of work reuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import attrs
import psycopg
import pytest
from contract_records import T0, SqlAdapter, audit_event, backup, session, user, workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.errors import NameTakenError, UpstreamUnavailableError
from strongroom.domain.principals import Session
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.workspaces import Membership
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving.access import Bearer
from support.postgres import truncate_all

# More than twice psycopg's default prepare_threshold (5): every statement of a create
# reaches the execution that prepares it, whatever the count it started from.
ROUNDS = 14


@pytest.fixture
def one_connection(pg_conninfo: str) -> Iterator[PostgresDatabase]:
    """The session's database, emptied, through a pool of a single connection."""
    with PostgresDatabase.from_url(pg_conninfo, min_size=1, max_size=1) as database:
        with database.connection() as connection:
            truncate_all(connection)
        yield database


class Creator:
    """An admin of a fresh workspace, creating backups by the use case (as the API does),
    as a signed-in ``Caller`` and as a session's ``Bearer`` (the joined read, then one
    autocommit statement)."""

    def __init__(self, database: PostgresDatabase) -> None:
        adapter = SqlAdapter("postgres", database.uow)
        ada = user()
        self.workspace = workspace(ada)
        token = format_token(TokenKind.SESSION, uuid4().bytes * 2)
        adapter.store(
            ada,
            self.workspace,
            Membership(self.workspace.id, ada.id, "admin", T0),
            Session(
                uuid4(), hash_token(token), ada.id, self.workspace.id, T0, T0.replace(year=2999)
            ),
        )
        self.facade: Any = blocking(bootstrap(uow=database.uow))
        self.bearer = Bearer(token)
        self.admin = self.facade.access.authenticate(token)

    def create(self, name: str, *, by_bearer: bool = False) -> Any:
        """Create a manual backup named ``name``."""
        caller = self.bearer if by_bearer else self.admin
        return self.facade.backups.create(caller, self.workspace.id, name, BackupKind.MANUAL)


@pytest.mark.parametrize("by_bearer", [False, True], ids=["caller", "bearer"])
def test_a_refused_create_leaves_the_connection_usable(
    one_connection: PostgresDatabase, by_bearer: bool
) -> None:
    """A create refused with ``name_taken``, then a valid one, again and again on the same
    connection: each refusal is ``name_taken``, each valid create succeeds, before and after
    psycopg prepares the pipeline's statements."""
    creator = Creator(one_connection)
    creator.create("taken", by_bearer=by_bearer)
    for round_ in range(ROUNDS):
        with pytest.raises(NameTakenError):
            creator.create("taken", by_bearer=by_bearer)
        created = creator.create(f"fresh {round_}", by_bearer=by_bearer)
        assert created.name == f"fresh {round_}"


def test_a_refused_step_behind_another_leaves_the_connection_usable(
    one_connection: PostgresDatabase,
) -> None:
    """``add_counted`` inside an open transaction: the counted insert (refused with
    ``name_taken`` here) and its audit event behind it, in one pipeline, again and again on
    the same connection: each refusal is ``name_taken``, each valid one adds its backup."""
    adapter = SqlAdapter("postgres", one_connection.uow)
    ada = user()
    target = workspace(ada)
    mine = session(ada.id, target.id)
    adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0), mine)

    def add(name: str) -> bool | None:
        candidate = backup(target.id, name)
        event = attrs.evolve(audit_event(target.id), target_id=str(candidate.id))
        with adapter.uow() as uow:
            uow.workspaces.get(target.id, for_update=True)  # the transaction is open
            added = uow.backups.add_counted(candidate, event, None)
            uow.commit()
        return bool(added)

    assert add("taken")
    for round_ in range(ROUNDS):
        with pytest.raises(NameTakenError):
            add("taken")
        assert add(f"fresh {round_}")


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["create", "refused", "pause", "update"]), st.booleans()),
        min_size=1,
        max_size=25,
    )
)
def test_any_sequence_of_requests_on_one_connection(
    pg_conninfo: str, steps: list[tuple[str, bool]]
) -> None:
    """Creates (fresh or taken names, by a caller or a session's bearer), refused renames
    and pauses in any order, on a new connection of a single-connection pool: each answers
    what it would on a connection of its own."""
    with PostgresDatabase.from_url(pg_conninfo, min_size=1, max_size=1) as database:
        creator = Creator(database)
        first = creator.create(f"first {uuid4().hex}")
        for step, by_bearer in steps:
            if step == "create":
                creator.create(f"backup {uuid4().hex}", by_bearer=by_bearer)
            elif step == "refused":
                with pytest.raises(NameTakenError):
                    creator.create(first.name, by_bearer=by_bearer)
            elif step == "pause":
                creator.facade.backups.pause(creator.admin, first.id)
            else:
                created = creator.create(f"to rename {uuid4().hex}")
                with pytest.raises(NameTakenError):
                    creator.facade.backups.update(
                        creator.admin, created.id, BackupChanges(name=first.name)
                    )


def test_a_create_that_times_out_while_prepared_leaves_no_bad_connection(pg_conninfo: str) -> None:
    """The create whose statement psycopg prepares waits on a lock past the statement
    timeout (its ``PREPARE`` fails, not a refusal): it is ``upstream_unavailable``, and the
    next create, once the lock is gone, succeeds."""
    with PostgresDatabase.from_url(
        pg_conninfo, min_size=1, max_size=1, statement_timeout=0.3
    ) as database:
        creator = Creator(database)
        creator.create("taken")
        with pytest.raises(NameTakenError):  # a rollback before anything is prepared
            creator.create("taken")
        for number in range(3):  # 5 executions: psycopg prepares on the next one
            creator.create(f"before {number} {uuid4().hex}")
        with psycopg.connect(pg_conninfo) as locker:
            locker.execute("LOCK TABLE backups IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(UpstreamUnavailableError):
                creator.create(f"locked out {uuid4().hex}")
        for number in range(3):
            creator.create(f"after {number} {uuid4().hex}")
