"""The run lifecycle of contract 11: ``queued -> running -> succeeded | failed |
cancelled``, claims and leases, heartbeats with progress, cancellation requests, attempts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from strongroom.domain.backups import Backup, BackupKind, BackupState
from strongroom.domain.errors import InvalidRequestError, InvalidStateError
from strongroom.domain.runs import (
    ABANDON_AFTER,
    FINISHED_STATES,
    LEASE,
    MAX_ATTEMPTS,
    Progress,
    Run,
    RunState,
    RunTrigger,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORKER = UUID(int=7)


def backup(kind: BackupKind = BackupKind.LOCAL) -> Backup:
    """An active backup of ``kind``."""
    draft = Backup.draft(uuid4(), uuid4(), "Nightly", kind, T0)
    return attrs.evolve(draft, state=BackupState.ACTIVE, worker_id=WORKER)


def queued() -> Run:
    """A run the scheduler queued at ``T0``."""
    return Run.queued(uuid4(), backup(), RunTrigger.SCHEDULE, T0)


def at(seconds: float) -> datetime:
    """``seconds`` after ``T0``."""
    return T0 + timedelta(seconds=seconds)


class TestTransitions:
    def test_claim_starts_the_run_with_a_lease(self) -> None:
        """A claim makes the run ``running`` for its worker, with a 60-second lease."""
        run = queued().claim(WORKER, at(5))
        assert run.state is RunState.RUNNING
        assert (run.worker_id, run.started_at, run.lease_expires_at) == (WORKER, at(5), at(65))
        assert run.attempt == 1

    def test_only_a_queued_run_can_be_claimed(self) -> None:
        """A running run cannot be claimed again (409 ``invalid_state``)."""
        with pytest.raises(InvalidStateError):
            queued().claim(WORKER, at(1)).claim(uuid4(), at(2))

    def test_heartbeat_extends_the_lease_and_records_progress(self) -> None:
        """A heartbeat moves the lease to 60 s after it and keeps the progress as of it."""
        run = queued().claim(WORKER, at(0)).heartbeat(at(30), Progress(10, 100, "tar"))
        assert run.lease_expires_at == at(30) + LEASE
        assert run.progress == Progress(10, 100, "tar", at(30))
        quiet = run.heartbeat(at(50))
        assert quiet.lease_expires_at == at(110)
        assert quiet.progress == run.progress

    @pytest.mark.parametrize(("done", "total"), [(101, 100), (-1, None), (0, -1)])
    def test_progress_beyond_its_total_is_refused(self, done: int, total: int | None) -> None:
        """``bytes_done`` above ``bytes_total``, or a negative count, is 400
        ``invalid_request`` (refused, not clamped)."""
        with pytest.raises(InvalidRequestError):
            Progress(done, total)

    def test_a_long_progress_message_is_refused(self) -> None:
        """A progress message is at most 2000 characters."""
        assert Progress(0, message="x" * 2000).message == "x" * 2000
        with pytest.raises(InvalidRequestError):
            Progress(0, message="x" * 2001)

    def test_a_manual_run_has_no_lease(self) -> None:
        """A manual run starts ``running`` without a lease, takes no heartbeat and never
        loses a lease."""
        run = Run.manual(uuid4(), backup(BackupKind.MANUAL), T0)
        assert (run.state, run.lease_expires_at, run.attempt) == (RunState.RUNNING, None, 1)
        with pytest.raises(InvalidStateError):
            run.heartbeat(at(1))
        assert not run.lease_expired(at(10**6))
        with pytest.raises(InvalidStateError):
            run.expire_lease(at(10**6))
        assert run.fail("disk full", at(3)).state is RunState.FAILED

    def test_an_expired_lease_requeues_then_fails_after_three_attempts(self) -> None:
        """Each lost lease puts the run back to ``queued`` with ``attempt + 1`` and no
        holder; the third one fails it with ``lease expired``."""
        run = queued()
        for attempt in range(1, MAX_ATTEMPTS):
            run = run.claim(WORKER, at(100 * attempt))
            run = run.expire_lease(at(100 * attempt + 60))
            assert run.state is RunState.QUEUED
            assert run.attempt == attempt + 1
            assert (run.worker_id, run.lease_expires_at, run.started_at) == (None, None, None)
        run = run.claim(WORKER, at(1000)).expire_lease(at(1061))
        assert (run.state, run.error, run.finished_at) == (
            RunState.FAILED,
            "lease expired",
            at(1061),
        )
        assert run.attempt == MAX_ATTEMPTS

    def test_a_live_lease_does_not_expire(self) -> None:
        """Before its lease runs out a run cannot be requeued (409 ``invalid_state``)."""
        run = queued().claim(WORKER, at(0))
        assert not run.lease_expired(at(59))
        with pytest.raises(InvalidStateError):
            run.expire_lease(at(59))

    def test_cancelling_a_queued_run_is_immediate(self) -> None:
        """A queued run becomes ``cancelled`` at once."""
        run = queued().request_cancel(at(3))
        assert (run.state, run.finished_at) == (RunState.CANCELLED, at(3))

    @pytest.mark.parametrize(
        "finish",
        [
            lambda run: run.heartbeat(at(20)),
            lambda run: run.fail("interrupted", at(20)),
            lambda run: run.expire_lease(at(200)),
        ],
        ids=["heartbeat", "fail", "lease-expiry"],
    )
    def test_cancelling_a_running_run_waits_for_its_holder(
        self, finish: Callable[[Run], Run]
    ) -> None:
        """A running run gets ``cancel_requested`` and becomes ``cancelled`` at its next
        heartbeat, fail or lease expiry."""
        requested = queued().claim(WORKER, at(0)).request_cancel(at(10))
        assert (requested.state, requested.cancel_requested) == (RunState.RUNNING, True)
        assert requested.request_cancel(at(11)) == requested
        cancelled = finish(requested)
        assert cancelled.state is RunState.CANCELLED
        assert cancelled.error is None
        assert cancelled.lease_expires_at is None

    def test_fail_records_the_error(self) -> None:
        """``fail`` takes 1 to 2000 characters and keeps them as the run's error."""
        running = queued().claim(WORKER, at(0))
        assert running.fail("x" * 2000, at(5)).error == "x" * 2000
        for bad in ("", "x" * 2001):
            with pytest.raises(InvalidRequestError):
                running.fail(bad, at(5))

    @pytest.mark.parametrize(
        "act",
        [
            lambda run: run.claim(WORKER, at(500)),
            lambda run: run.heartbeat(at(500)),
            lambda run: run.fail("late", at(500)),
            lambda run: run.request_cancel(at(500)),
            lambda run: run.expire_lease(at(500)),
            lambda run: run.succeeded(1, 1, at(500)),
        ],
        ids=["claim", "heartbeat", "fail", "cancel", "expire", "succeed"],
    )
    def test_a_finished_run_refuses_every_transition(self, act: Callable[[Run], Run]) -> None:
        """Succeeded, failed and cancelled runs are final: 409 ``invalid_state``."""
        running = queued().claim(WORKER, at(0))
        for finished in (
            running.succeeded(1, 10, at(5)),
            running.fail("boom", at(5)),
            queued().request_cancel(at(5)),
        ):
            with pytest.raises(InvalidStateError):
                act(finished)

    def test_a_manual_run_left_a_day_with_pending_uploads_is_abandoned(self) -> None:
        """Contract 13: 24 h after its newest pending upload was announced, a manual run
        is ``failed`` with ``error: "abandoned"``; not a second before, not without
        pending uploads, never a claimed run (its lease covers it)."""
        manual = Run.manual(uuid4(), backup(BackupKind.MANUAL), T0)
        announced = at(30)
        day_later = announced + ABANDON_AFTER
        assert not manual.left_since(announced, day_later - timedelta(microseconds=1))
        assert not manual.left_since(None, at(10**7))
        assert not queued().claim(WORKER, at(0)).left_since(announced, at(10**7))
        with pytest.raises(InvalidStateError):
            manual.abandon(announced, day_later - timedelta(seconds=1))
        abandoned = manual.abandon(announced, day_later)
        assert (abandoned.state, abandoned.error, abandoned.finished_at) == (
            RunState.FAILED,
            "abandoned",
            day_later,
        )
        assert not abandoned.left_since(announced, at(10**7))
        cancelled = manual.request_cancel(at(40)).abandon(announced, day_later)
        assert (cancelled.state, cancelled.error) == (RunState.CANCELLED, None)

    def test_records_written_before_leases_keep_working(self) -> None:
        """A run built from the fields it had before contract 11 has the new ones at their
        defaults: attempt 1, no lease, no cancel request, no progress."""
        run = Run(uuid4(), uuid4(), uuid4(), RunState.QUEUED, RunTrigger.API, T0)
        assert (run.attempt, run.lease_expires_at, run.cancel_requested, run.progress) == (
            1,
            None,
            False,
            None,
        )


_ERRORS = st.text(min_size=1, max_size=40)
_DELAYS = st.integers(0, 90)  # seconds; leases last 60, so some heartbeats come too late
_TRANSITIONS = ("claim", "heartbeat", "succeed", "fail", "request_cancel", "expire_lease")


def allowed(name: str, run: Run, now: datetime) -> bool:
    """Whether contract 11 lets ``name`` happen to ``run`` at ``now``."""
    if run.finished:
        return False
    lease = run.lease_expires_at if run.state is RunState.RUNNING else None
    return {
        "claim": run.state is RunState.QUEUED,
        "heartbeat": lease is not None,
        "expire_lease": lease is not None and now >= lease,
    }.get(name, True)


class RunLifecycle(RuleBasedStateMachine):
    """Random transitions of runs at increasing times. Each transition either succeeds
    (exactly when the contract allows it) or is refused with ``invalid_state``, leaving the
    run as it was; the invariants hold after every step. A finished run is tried with every
    transition, then a new run starts."""

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.run = queued()
        self.cancel_was_requested = False
        self.seen_final: Run | None = None

    @initialize(manual=st.booleans())
    def start(self, manual: bool) -> None:
        self.new_run(manual)

    def new_run(self, manual: bool) -> None:
        source = backup(BackupKind.MANUAL if manual else BackupKind.LOCAL)
        self.run = (
            Run.manual(uuid4(), source, self.now)
            if manual
            else Run.queued(uuid4(), source, RunTrigger.SCHEDULE, self.now)
        )
        self.cancel_was_requested = False
        self.seen_final = None

    def transition(self, name: str, error: str = "boom") -> Callable[[Run], Run]:
        """The transition called ``name``, at the current time."""
        return {
            "claim": lambda run: run.claim(WORKER, self.now),
            "heartbeat": lambda run: run.heartbeat(self.now),
            "succeed": lambda run: run.succeeded(1, 10, self.now),
            "fail": lambda run: run.fail(error, self.now),
            "request_cancel": lambda run: run.request_cancel(self.now),
            "expire_lease": lambda run: run.expire_lease(self.now),
        }[name]

    def step(self, delay: int, name: str, transition: Callable[[Run], Run]) -> Run | None:
        """Apply ``transition`` ``delay`` seconds later; check what every transition
        promises; the new run, or ``None`` when it was refused."""
        self.now += timedelta(seconds=delay)
        before = self.run
        try:
            after = transition(before)
        except InvalidStateError:
            after = None
        assert (after is not None) == allowed(name, before, self.now), name
        if after is None:
            return None
        if name == "request_cancel":
            self.cancel_was_requested = True
        if after.attempt != before.attempt:
            assert name == "expire_lease"
            assert after.attempt == before.attempt + 1
        if after.state is RunState.CANCELLED:
            assert name == "request_cancel" or before.cancel_requested
        if after.lease_expires_at is not None and before.lease_expires_at is not None:
            assert after.lease_expires_at >= before.lease_expires_at
        if after.lease_expires_at != before.lease_expires_at and after.lease_expires_at:
            assert name in {"claim", "heartbeat"}
        self.run = after
        return after

    @rule(delay=_DELAYS, name=st.sampled_from(_TRANSITIONS), error=_ERRORS)
    def anything(self, delay: int, name: str, error: str) -> None:
        """Any transition, allowed or not."""
        self.step(delay, name, self.transition(name, error))

    @precondition(lambda self: self.run.state is RunState.QUEUED)
    @rule(delay=_DELAYS)
    def claim(self, delay: int) -> None:
        after = self.step(delay, "claim", self.transition("claim"))
        assert after is not None
        assert (after.state, after.lease_expires_at) == (RunState.RUNNING, self.now + LEASE)

    @precondition(lambda self: self.run.lease_expires_at is not None)
    @rule(
        delay=_DELAYS,
        progress=st.none()
        | st.builds(Progress, st.integers(0, 10**12), st.none(), st.none() | st.text(max_size=20)),
    )
    def heartbeat(self, delay: int, progress: Progress | None) -> None:
        requested = self.run.cancel_requested
        previous = self.run.progress
        after = self.step(delay, "heartbeat", lambda run: run.heartbeat(self.now, progress))
        assert after is not None
        if requested:
            assert after.state is RunState.CANCELLED
        else:
            assert after.lease_expires_at == self.now + LEASE
            expected = previous if progress is None else attrs.evolve(progress, updated_at=self.now)
            assert after.progress == expected

    @precondition(lambda self: self.run.lease_expires_at is not None)
    @rule(delay=_DELAYS, done=st.integers(-5, 200), total=st.integers(-5, 200))
    def progress_report(self, delay: int, done: int, total: int) -> None:
        """A progress report is built before its heartbeat: refused when it overshoots."""
        if 0 <= done <= total:
            self.heartbeat(delay, Progress(done, total))
        else:
            with pytest.raises(InvalidRequestError):
                Progress(done, total)

    @precondition(lambda self: self.run.lease_expires_at is not None)
    @rule(extra=st.integers(0, 100))
    def lose_lease(self, extra: int) -> None:
        """The holder goes silent until its lease is over."""
        assert self.run.lease_expires_at is not None
        requested, attempt = self.run.cancel_requested, self.run.attempt
        delay = (self.run.lease_expires_at - self.now).total_seconds() + extra
        after = self.step(max(0, int(delay) + 1), "expire_lease", self.transition("expire_lease"))
        assert after is not None
        if requested:
            assert after.state is RunState.CANCELLED
        elif attempt < MAX_ATTEMPTS:
            assert (after.state, after.attempt) == (RunState.QUEUED, attempt + 1)
            assert (after.worker_id, after.lease_expires_at) == (None, None)
        else:
            assert (after.state, after.error) == (RunState.FAILED, "lease expired")

    @precondition(lambda self: not self.run.finished)
    @rule(
        delay=_DELAYS,
        how=st.sampled_from(["succeed", "fail", "fail_badly", "request_cancel"]),
        error=_ERRORS,
    )
    def end(self, delay: int, how: str, error: str) -> None:
        """The ways a run can end (one rule, so that runs often live long enough to lose
        their lease three times)."""
        requested, state = self.run.cancel_requested, self.run.state
        if how == "fail_badly":
            before = self.run
            with pytest.raises(InvalidRequestError):
                before.fail("" if delay % 2 else "x" * 2001, self.now)
            assert self.run == before
            return
        after = self.step(delay, how, self.transition(how, error))
        assert after is not None
        if how == "succeed":
            assert (after.state, after.artifact_count, after.bytes) == (RunState.SUCCEEDED, 1, 10)
        elif how == "fail":
            assert after.state is (RunState.CANCELLED if requested else RunState.FAILED)
            assert after.error == (None if requested else error)
        else:
            expected = RunState.CANCELLED if state is RunState.QUEUED else RunState.RUNNING
            assert after.state is expected

    @precondition(lambda self: self.run.finished)
    @rule(manual=st.booleans(), delay=_DELAYS)
    def finished_then_new(self, manual: bool, delay: int) -> None:
        """Every transition of a finished run is refused; then a new run starts."""
        for name in _TRANSITIONS:
            self.step(delay, name, self.transition(name))
        self.a_finished_run_never_changes()
        self.new_run(manual)

    @invariant()
    def a_finished_run_never_changes(self) -> None:
        if self.seen_final is not None:
            assert self.run == self.seen_final
        if self.run.state in FINISHED_STATES:
            self.seen_final = self.run
            assert self.run.finished_at is not None
            assert self.run.lease_expires_at is None

    @invariant()
    def a_lease_only_while_running(self) -> None:
        if self.run.lease_expires_at is not None:
            assert self.run.state is RunState.RUNNING
            assert self.run.trigger is not RunTrigger.MANUAL

    @invariant()
    def attempts_stay_within_three(self) -> None:
        assert 1 <= self.run.attempt <= MAX_ATTEMPTS

    @invariant()
    def cancelled_only_when_asked(self) -> None:
        if self.run.state is RunState.CANCELLED or self.run.cancel_requested:
            assert self.cancel_was_requested

    @invariant()
    def progress_within_its_total(self) -> None:
        progress = self.run.progress
        if progress is not None and progress.bytes_total is not None:
            assert progress.bytes_done <= progress.bytes_total


TestRunLifecycle = RunLifecycle.TestCase


class TestAttempts:
    """A run's attempt count is 1-based in every store."""

    def test_a_run_below_its_first_attempt_cannot_exist(self) -> None:
        """``attempt`` 0 is refused when the run is made (PostgreSQL's CHECK refuses it
        too, so the in-memory store can never hold one)."""
        with pytest.raises(ValueError, match="attempt"):
            attrs.evolve(queued(), attempt=0)
