"""An Idempotency-Key keeps the use case's result, and a replay returns that result.

The stored form is the core's own (``ResultForm``); a replay is a normal return value, an
object equal to the first answer, which any driving adapter presents as it did the first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from uuid import uuid4

import attrs
from hypothesis import given
from hypothesis import strategies as st

from strategies import (
    backup_kinds,
    destinations,
    postgres_sources,
    retention_policies,
    s3_sources,
    schedules,
    sources,
)
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.secrets import FernetSecretBox
from strongroom.domain.backups import Backup, BackupState
from strongroom.domain.restores import Restore, RestoreState
from strongroom.ports.driven.identity import Identity
from strongroom.ports.driving import IdempotencyKey
from strongroom.ports.driving.idempotency import ResultForm
from strongroom.ports.driving.restores import CREATED_RESTORE
from strongroom.ports.driving.sessions import ISSUED_SESSION
from support.world import make_facade

BOX = FernetSecretBox("a secret key")
ADA = Identity("subject-ada", "ada@example.com", "Ada")


def instants() -> st.SearchStrategy[datetime]:
    """Aware instants with microseconds, as the clock gives them."""
    return st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    )


@st.composite
def backups(draw: st.DrawFn) -> Backup:
    """Backups in any configuration, sealed secrets included."""
    return Backup(
        uuid4(),
        uuid4(),
        draw(st.text(min_size=1, max_size=20)),
        draw(backup_kinds()),
        draw(st.sampled_from(BackupState)),
        draw(st.booleans()),
        draw(instants()),
        draw(instants()),
        source=draw(st.none() | sources()),
        sealed_credentials=draw(st.none() | st.binary(max_size=40)),
        schedule=draw(st.none() | schedules()),
        worker_id=draw(st.none() | st.builds(uuid4)),
        retention=draw(st.none() | retention_policies()),
        destination=draw(destinations()),
        sealed_destination_credentials=draw(st.none() | st.binary(max_size=40)),
        next_run_at=draw(st.none() | instants()),
    )


@given(backup=backups())
def test_a_kept_backup_comes_back_equal(backup: Backup) -> None:
    """Every field, unions and bytes included, survives the stored form."""
    form = ResultForm(Backup)
    assert form.load(form.dump(backup, BOX), BOX) == backup


@st.composite
def restores(draw: st.DrawFn) -> Restore:
    """Restores in any state, into either kind of target, credentials sealed or erased."""
    return Restore(
        uuid4(),
        uuid4(),
        uuid4(),
        draw(s3_sources() | postgres_sources()),
        draw(st.sampled_from(RestoreState)),
        draw(instants()),
        started_at=draw(st.none() | instants()),
        finished_at=draw(st.none() | instants()),
        error=draw(st.none() | st.text(min_size=1, max_size=40)),
        sealed_credentials=draw(st.none() | st.binary(min_size=16, max_size=40)),
        attempt=draw(st.integers(1, 3)),
        lease_expires_at=draw(st.none() | instants()),
    )


@given(restore=restores())
def test_a_kept_restore_comes_back_equal_but_for_its_credentials(restore: Restore) -> None:
    """Every field of a restore survives the stored form except its sealed credentials,
    which the key never keeps (only the restore's own record does, until it finishes)."""
    stored = CREATED_RESTORE.dump(restore, BOX)
    assert CREATED_RESTORE.load(stored, BOX) == attrs.evolve(restore, sealed_credentials=None)
    assert "sealed_credentials" not in stored


def test_a_session_replay_returns_the_first_session_and_keeps_the_token_sealed() -> None:
    """The same key and request: the same session, token and all; the store never holds
    the token in clear."""
    facade = make_facade()
    key = IdempotencyKey("k-1", "POST /v1/auth/sessions", "fingerprint")
    first = facade.sessions.start_session(ADA, idempotency=key)
    second = facade.sessions.start_session(ADA, idempotency=key)
    assert second == first
    stored = ISSUED_SESSION.dump(first, BOX)
    assert first.token is not None
    assert first.token not in stored


def test_a_replay_under_another_secret_key_shows_no_token() -> None:
    """Sealed under a secret key since replaced, the replay has no token
    (docs/decisions/idempotency.md)."""
    uow = partial(MemoryUnitOfWork, MemoryStore())
    clock = ManualClock()
    key = IdempotencyKey("k-1", "POST /v1/auth/sessions", "fingerprint")
    before = make_facade(clock=clock, uow=uow, secret_key="before")
    first = before.sessions.start_session(ADA, idempotency=key)
    after = make_facade(clock=clock, uow=uow, secret_key="after")
    clock.advance(timedelta(hours=1))
    replay = after.sessions.start_session(ADA, idempotency=key)
    assert first.token is not None
    assert replay == attrs.evolve(first, token=None)
