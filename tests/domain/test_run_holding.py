"""Who holds a run, and how long a claim may wait (contract 11)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.runs import LEASE, MAX_CLAIM_WAIT, Run, RunTrigger, check_claim_wait

T0 = datetime(2030, 1, 2, tzinfo=UTC)


def queued() -> Run:
    """A queued run of a local backup."""
    backup = Backup.draft(uuid4(), uuid4(), "local", BackupKind.LOCAL, T0)
    return Run.queued(uuid4(), backup, RunTrigger.API, T0)


def test_the_claimer_holds_the_run_until_it_is_requeued() -> None:
    """Nobody holds a queued run; the claimer holds it running and finished; a requeued
    run is held by nobody again."""
    run, worker = queued(), uuid4()
    assert not run.held_by(worker)
    assert not run.held_by(None)
    claimed = run.claim(worker, T0)
    assert claimed.held_by(worker)
    assert not claimed.held_by(uuid4())
    assert not claimed.held_by(None)
    assert claimed.fail("disk full", T0).held_by(worker)
    requeued = claimed.expire_lease(T0 + LEASE)
    assert not requeued.held_by(worker)


@given(st.integers(min_value=-1000, max_value=1000))
def test_a_claim_waits_0_to_30_seconds(wait: int) -> None:
    """In range it is kept as given; outside, 400 ``invalid_request``."""
    if 0 <= wait <= MAX_CLAIM_WAIT:
        assert check_claim_wait(wait) == wait
    else:
        with pytest.raises(InvalidRequestError):
            check_claim_wait(wait)
