"""Runs: one execution of a backup, from its start to the confirmation of its artifacts."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import InvalidStateError, ValidationFailedError


class RunState(StrEnum):
    """Where a run stands (contract section 6)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_STATES = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})


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


@attrs.frozen
class Run:
    """One execution of a backup. ``artifact_count`` and ``bytes`` count its ``available``
    artifacts."""

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

    def without_artifact(self, size: int) -> Run:
        """The run after one of its ``available`` artifacts (of ``size`` bytes) was deleted:
        it no longer counts it (contract 10)."""
        return attrs.evolve(
            self,
            artifact_count=max(0, self.artifact_count - 1),
            bytes=max(0, self.bytes - size),
        )

    def succeeded(self, artifact_count: int, total_bytes: int, now: datetime) -> Run:
        """The run after its artifacts were confirmed."""
        self.ensure_open()
        return attrs.evolve(
            self,
            state=RunState.SUCCEEDED,
            started_at=self.started_at or now,
            finished_at=now,
            artifact_count=artifact_count,
            bytes=total_bytes,
        )
