"""Runs: one execution of a backup, from its start to the confirmation of its artifacts."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import (
    InvalidRequestError,
    InvalidStateError,
    ValidationFailedError,
)
from strongroom.domain.events import Recorded


class RunState(StrEnum):
    """Where a run stands (contract section 6)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_STATES = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})

# Contract 11: a claim or heartbeat holds the run this long; a run is tried at most this
# many times; a failed run's error is 1 to MAX_ERROR characters.
LEASE = timedelta(seconds=60)
MAX_ATTEMPTS = 3
MAX_ERROR = 2000
MAX_PROGRESS_MESSAGE = 2000
LEASE_EXPIRED = "lease expired"
# Contract 13 (turn 3): a manual run (no lease) whose client announced nothing for this
# long while uploads are pending is failed with ``ABANDONED``, its uploads aborted.
ABANDON_AFTER = timedelta(hours=24)
ABANDONED = "abandoned"
# Contract 11: a claim waits at most this long for a queued run (long poll).
MAX_CLAIM_WAIT = 30


def check_claim_wait(wait_seconds: int) -> int:
    """A claim's ``wait_seconds``: 0 to ``MAX_CLAIM_WAIT`` (``invalid_request`` otherwise)."""
    if not 0 <= wait_seconds <= MAX_CLAIM_WAIT:
        raise InvalidRequestError(f"wait_seconds must be 0 to {MAX_CLAIM_WAIT}")
    return wait_seconds


class RunTrigger(StrEnum):
    """What started a run: a manual client, the scheduler, or ``trigger`` through the API."""

    MANUAL = "manual"
    SCHEDULE = "schedule"
    API = "api"


def ensure_manual(backup: Backup) -> None:
    """Refuse ``POST /v1/runs`` for a backup that is not manual (a kind rule: 422)."""
    if backup.kind is not BackupKind.MANUAL:
        raise ValidationFailedError(
            f"runs are started by the client only for manual backups, not {backup.kind}"
        )


def ensure_triggerable(backup: Backup) -> None:
    """Refuse ``trigger`` of a manual backup (a kind rule: 422); its client starts its runs."""
    if backup.kind is BackupKind.MANUAL:
        raise ValidationFailedError("a manual backup cannot be triggered: its client starts runs")


def _check_progress(progress: Progress, _: object, bytes_total: int | None) -> None:
    if progress.bytes_done < 0 or (bytes_total is not None and bytes_total < 0):
        raise InvalidRequestError("progress bytes must not be negative")
    if bytes_total is not None and progress.bytes_done > bytes_total:
        raise InvalidRequestError("progress.bytes_done must not exceed progress.bytes_total")


def _check_message(_: object, __: object, message: str | None) -> None:
    if message is not None and len(message) > MAX_PROGRESS_MESSAGE:
        raise InvalidRequestError(
            f"progress.message must be at most {MAX_PROGRESS_MESSAGE} characters"
        )


@attrs.frozen
class Progress:
    """How far a running run's holder says it got, as of its heartbeat at ``updated_at``.

    ``bytes_done`` beyond a known ``bytes_total`` is refused (``invalid_request``), never
    clamped: a holder that reports it is wrong, and the caller should hear so.
    ``updated_at`` is set by the heartbeat that records the progress."""

    bytes_done: int
    bytes_total: int | None = attrs.field(default=None, validator=_check_progress)
    message: str | None = attrs.field(default=None, validator=_check_message)
    updated_at: datetime | None = None


def _check_error(error: str) -> str:
    if not 1 <= len(error) <= MAX_ERROR:
        raise InvalidRequestError(f"error must be 1 to {MAX_ERROR} characters")
    return error


@attrs.frozen
class Run:
    """One execution of a backup. ``artifact_count`` and ``bytes`` count its ``available``
    artifacts.

    Its lifecycle (contract 11): ``queued -> running -> succeeded | failed | cancelled``.
    A claimed run holds a lease its holder extends by heartbeats; a lease that expires puts
    the run back to ``queued`` with ``attempt + 1``, up to ``MAX_ATTEMPTS``. A finished run
    never changes: every transition of one is refused with ``invalid_state``.
    """

    id: UUID
    workspace_id: UUID
    backup_id: UUID
    state: RunState
    trigger: RunTrigger
    created_at: datetime
    worker_id: UUID | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    artifact_count: int = 0
    bytes: int = 0
    error: str | None = None
    # 1-based (every store refuses less): a run is on its first attempt until a lease expires.
    attempt: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    lease_expires_at: datetime | None = None
    cancel_requested: bool = False
    progress: Progress | None = None

    def audit_view(self) -> dict[str, JsonValue]:
        """What the audit trail shows of a run."""
        return {
            "backup_id": str(self.backup_id),
            "state": self.state.value,
            "trigger": self.trigger.value,
            "artifact_count": self.artifact_count,
            "bytes": self.bytes,
            "cancel_requested": self.cancel_requested,
        }

    def recorded_confirmation(self, finished: Run) -> Recorded:
        """``run.confirm``: the state and artifact count before and after."""
        return Recorded(
            "run.confirm",
            self.id,
            diff(
                {"state": self.state.value, "artifact_count": self.artifact_count},
                {"state": finished.state.value, "artifact_count": finished.artifact_count},
            ),
        )

    @classmethod
    def manual(cls, run_id: UUID, backup: Backup, now: datetime) -> Run:
        """A run a manual client starts: ``running`` at once."""
        return cls(
            run_id,
            backup.workspace_id,
            backup.id,
            RunState.RUNNING,
            RunTrigger.MANUAL,
            now,
            started_at=now,
        )

    @classmethod
    def queued(cls, run_id: UUID, backup: Backup, trigger: RunTrigger, now: datetime) -> Run:
        """A run waiting for its worker (local) or the service (cloud)."""
        return cls(
            run_id,
            backup.workspace_id,
            backup.id,
            RunState.QUEUED,
            trigger,
            now,
            worker_id=backup.worker_id,
        )

    @property
    def finished(self) -> bool:
        """Whether the run reached a final state."""
        return self.state in FINISHED_STATES

    def ensure_open(self) -> None:
        """Refuse uploads and confirmation into a finished run."""
        if self.finished:
            raise InvalidStateError(f"run is {self.state}: it takes no more artifacts")

    def _ensure_running(self, action: str) -> None:
        if self.state is not RunState.RUNNING:
            raise InvalidStateError(f"run is {self.state}: only a running run can {action}")

    def _finished_as(self, state: RunState, now: datetime, error: str | None = None) -> Run:
        return attrs.evolve(self, state=state, finished_at=now, lease_expires_at=None, error=error)

    def held_by(self, worker_id: UUID | None) -> bool:
        """Whether ``worker_id`` holds the run: it claimed it and the run is not back in the
        queue (a finished run stays held by its last holder)."""
        return (
            worker_id is not None
            and self.worker_id == worker_id
            and self.state is not RunState.QUEUED
        )

    def takes_uploads_from(self, worker_id: UUID | None) -> bool:
        """Whether a caller (``worker_id``: its worker, if it is one) may announce artifacts
        into the run and confirm it: only its holder while the run is claimed (contract
        section 13), so nobody breaks the holder's confirm; anyone allowed otherwise (a
        manual run, a run not claimed yet, a finished one)."""
        claimed = self.trigger is not RunTrigger.MANUAL and self.state is RunState.RUNNING
        return not claimed or self.held_by(worker_id)

    def claim(self, worker_id: UUID | None, now: datetime, lease: timedelta = LEASE) -> Run:
        """The run taken by ``worker_id`` (None: the service's own executor, which runs
        cloud backups): ``running``, with a lease of ``lease``."""
        if self.state is not RunState.QUEUED:
            raise InvalidStateError(f"run is {self.state}: only a queued run can be claimed")
        return attrs.evolve(
            self,
            state=RunState.RUNNING,
            worker_id=worker_id,
            started_at=now,
            lease_expires_at=now + lease,
        )

    def release(self) -> Run:
        """The claimed run handed back unworked (its claim's answer never reached the
        claimer): ``queued`` again with the same attempt."""
        self._ensure_running("be released")
        if self.lease_expires_at is None:
            raise InvalidStateError("run holds no lease: a manual run cannot be released")
        return attrs.evolve(
            self, state=RunState.QUEUED, started_at=None, lease_expires_at=None, progress=None
        )

    def lease_expired(self, now: datetime) -> bool:
        """Whether the run's lease ran out at ``now`` (a run without lease never does)."""
        return self.lease_expires_at is not None and now >= self.lease_expires_at

    def heartbeat(
        self, now: datetime, progress: Progress | None = None, lease: timedelta = LEASE
    ) -> Run:
        """The run after its holder's heartbeat: the lease extended to ``now + lease`` and
        ``progress`` recorded as of ``now``; a run whose cancel was requested is now
        ``cancelled``. Only a claimed (leased) running run takes heartbeats."""
        self._ensure_running("take a heartbeat")
        if self.lease_expires_at is None:
            raise InvalidStateError("run holds no lease: a manual run takes no heartbeats")
        if self.cancel_requested:
            return self._finished_as(RunState.CANCELLED, now)
        return attrs.evolve(
            self,
            lease_expires_at=max(self.lease_expires_at, now + lease),
            progress=self.progress if progress is None else attrs.evolve(progress, updated_at=now),
        )

    def fail(self, error: str, now: datetime) -> Run:
        """The run after its holder reported ``error`` (1 to ``MAX_ERROR`` characters):
        ``failed``, or ``cancelled`` when its cancel was requested."""
        checked = _check_error(error)
        self.ensure_open()
        if self.cancel_requested:
            return self._finished_as(RunState.CANCELLED, now)
        return self._finished_as(RunState.FAILED, now, checked)

    def request_cancel(self, now: datetime) -> Run:
        """Cancel the run: a ``queued`` one is ``cancelled`` at once, a ``running`` one gets
        ``cancel_requested`` (idempotent) until its holder next heartbeats or fails, or its
        lease expires."""
        if self.finished:
            raise InvalidStateError(f"run is {self.state}: it cannot be cancelled")
        if self.state is RunState.QUEUED:
            return self._finished_as(RunState.CANCELLED, now)
        return attrs.evolve(self, cancel_requested=True)

    def expire_lease(self, now: datetime) -> Run:
        """The run after its lease ran out: back to ``queued`` with ``attempt + 1`` and no
        holder, or ``failed`` with ``error: "lease expired"`` after ``MAX_ATTEMPTS``; a run
        whose cancel was requested is ``cancelled``."""
        self._ensure_running("lose its lease")
        if not self.lease_expired(now):
            raise InvalidStateError("run's lease has not expired")
        if self.cancel_requested:
            return self._finished_as(RunState.CANCELLED, now)
        if self.attempt >= MAX_ATTEMPTS:
            return self._finished_as(RunState.FAILED, now, LEASE_EXPIRED)
        return attrs.evolve(
            self,
            state=RunState.QUEUED,
            attempt=self.attempt + 1,
            worker_id=None,
            started_at=None,
            lease_expires_at=None,
            progress=None,
        )

    def left_since(self, last_announced_at: datetime | None, now: datetime) -> bool:
        """Whether a manual run was left by its client at ``now``: still ``running``, with
        pending uploads of which the newest was announced at ``last_announced_at`` (None:
        nothing pending, so nothing reserved), at least ``ABANDON_AFTER`` ago."""
        return (
            self.trigger is RunTrigger.MANUAL
            and self.state is RunState.RUNNING
            and last_announced_at is not None
            and now - last_announced_at >= ABANDON_AFTER
        )

    def abandon(self, last_announced_at: datetime | None, now: datetime) -> Run:
        """The manual run its client left (``left_since``): ``failed`` with ``error:
        "abandoned"``, or ``cancelled`` when its cancel was requested."""
        if not self.left_since(last_announced_at, now):
            raise InvalidStateError("run is not a manual run left with pending uploads")
        return self.fail(ABANDONED, now)

    def without_artifact(self, size: int) -> Run:
        """The run after one of its ``available`` artifacts (of ``size`` bytes) was deleted:
        it no longer counts it (contract 10)."""
        return attrs.evolve(
            self,
            artifact_count=max(0, self.artifact_count - 1),
            bytes=max(0, self.bytes - size),
        )

    def succeeded(self, artifact_count: int, total_bytes: int, now: datetime) -> Run:
        """The run after its artifacts were confirmed (also when its cancel was requested:
        the work is done and kept)."""
        self.ensure_open()
        return attrs.evolve(
            self,
            state=RunState.SUCCEEDED,
            lease_expires_at=None,
            started_at=self.started_at or now,
            finished_at=now,
            artifact_count=artifact_count,
            bytes=total_bytes,
        )
