"""Restore drills (contract section 16): a backup's newest copy restored into a scratch
target the service owns, and checked against what was recorded when it was made.

A drill passes only when every check passes; a failed drill names what differs (a table's
row count or checksum, an object's digest, a chunk), so a person knows what a real
restore would have lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue
from strongroom.domain.backups import Backup, BackupKind, PostgresSource, S3Source
from strongroom.domain.errors import InvalidStateError, ValidationFailedError
from strongroom.domain.slots import due_slot

# How many differences a drill's error names before it says "and N more".
NAMED_PROBLEMS = 5
# A drill running longer was left by a runner that stopped (drills hold no lease): the next
# runner fails it as interrupted.
DRILL_TIMEOUT = timedelta(hours=6)
INTERRUPTED = "the drill was interrupted: its runner stopped before it finished"


class DrillState(StrEnum):
    """Where a drill stands."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@attrs.frozen
class TableFacts:
    """A table as recorded at backup time, or as found after the restore."""

    rows: int
    checksum: str


def table_problems(
    expected: Mapping[str, TableFacts], found: Mapping[str, TableFacts]
) -> list[str]:
    """Every difference between the tables recorded and the tables restored."""
    problems: list[str] = []
    for name in sorted(expected.keys() | found.keys()):
        want, got = expected.get(name), found.get(name)
        if got is None:
            problems.append(f"table {name} is missing")
        elif want is None:
            problems.append(f"table {name} was not in the backup")
        elif got.rows != want.rows:
            problems.append(f"table {name} has {got.rows} rows, {want.rows} were backed up")
        elif got.checksum != want.checksum:
            problems.append(f"table {name} differs from the backup (checksum)")
    return problems


def object_problems(expected: Mapping[str, str], found: Mapping[str, str]) -> list[str]:
    """Every difference between objects' sha256 recorded and restored (key -> hex)."""
    problems: list[str] = []
    for key in sorted(expected.keys() | found.keys()):
        want, got = expected.get(key), found.get(key)
        if got is None:
            problems.append(f"object {key} is missing")
        elif want is None:
            problems.append(f"object {key} was not in the backup")
        elif got != want:
            problems.append(f"object {key} differs from the backup (sha256)")
    return problems


def check_drillable(backup: Backup) -> str:
    """The source type the service drills ``backup`` as; ``validation_failed`` for a local
    or manual backup (their formats are client-side: the agent would run the drill, which
    is not offered yet) and for a cloud backup without a source of a drillable type."""
    if backup.kind is not BackupKind.CLOUD:
        raise ValidationFailedError(
            f"a {backup.kind} backup's copies are restored client-side: the service drills "
            "only cloud backups (s3 and postgres sources)"
        )
    if not isinstance(backup.source, S3Source | PostgresSource):
        raise ValidationFailedError("the backup has no s3 or postgres source to drill")
    return backup.source.type


def summary(problems: list[str]) -> str | None:
    """A drill's error: the first differences, and how many more; None when none."""
    if not problems:
        return None
    named = "; ".join(problems[:NAMED_PROBLEMS])
    rest = len(problems) - NAMED_PROBLEMS
    return named + (f"; and {rest} more" if rest > 0 else "")


@attrs.frozen
class Drill:
    """One drill of one backup's run."""

    id: UUID
    workspace_id: UUID
    backup_id: UUID
    run_id: UUID | None
    state: DrillState
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    restore_seconds: float | None = None
    bytes: int | None = None
    checks: Mapping[str, object] = attrs.field(factory=dict)
    error: str | None = None

    @classmethod
    def queued(cls, drill_id: UUID, workspace_id: UUID, backup_id: UUID, now: datetime) -> Drill:
        """A drill asked for now, waiting for the service's runner."""
        return cls(drill_id, workspace_id, backup_id, None, DrillState.QUEUED, now)

    def audit_view(self) -> dict[str, JsonValue]:
        """What the audit trail shows of a drill."""
        return {
            "backup_id": str(self.backup_id),
            "run_id": None if self.run_id is None else str(self.run_id),
            "state": self.state.value,
            "error": self.error,
        }

    def started(self, run_id: UUID, now: datetime) -> Drill:
        """Running, on the newest good copy ``run_id``."""
        if self.state is not DrillState.QUEUED:
            raise InvalidStateError(f"drill is {self.state}")
        return attrs.evolve(self, state=DrillState.RUNNING, run_id=run_id, started_at=now)

    def finished(
        self,
        problems: list[str],
        checks: Mapping[str, object],
        restored_bytes: int,
        restore_seconds: float,
        now: datetime,
    ) -> Drill:
        """Succeeded when no check found a difference, failed naming them otherwise."""
        if self.state is not DrillState.RUNNING:
            raise InvalidStateError(f"drill is {self.state}")
        return attrs.evolve(
            self,
            state=DrillState.FAILED if problems else DrillState.SUCCEEDED,
            finished_at=now,
            restore_seconds=round(restore_seconds, 3),
            bytes=restored_bytes,
            checks=dict(checks),
            error=summary(problems),
        )

    def stale(self, now: datetime) -> bool:
        """Whether it has been running longer than ``DRILL_TIMEOUT`` (its runner died)."""
        return (
            self.state is DrillState.RUNNING
            and self.started_at is not None
            and now - self.started_at > DRILL_TIMEOUT
        )

    def broke(self, error: str, now: datetime) -> Drill:
        """Failed before its checks could run (nothing to restore, the restore failed)."""
        if self.state not in (DrillState.QUEUED, DrillState.RUNNING):
            raise InvalidStateError(f"drill is {self.state}")
        return attrs.evolve(self, state=DrillState.FAILED, finished_at=now, error=error)


@attrs.frozen
class DrillSlot:
    """A drill slot that came: a ``queued`` drill (``queue``), or a skip because a drill of
    the backup is still queued or running; either way ``next_drill_at`` follows."""

    slot: datetime
    next_drill_at: datetime
    queue: bool


def decide_drill_slot(backup: Backup, now: datetime, has_open_drill: bool) -> DrillSlot | None:
    """What the scheduler does with ``backup``'s drill slot at ``now``; None when none is
    due or drills are not scheduled (a draft, paused, or no ``drill``). Missed slots give
    one drill, as missed run slots give one run."""
    slot = due_slot(backup.next_drill_at, now)
    schedule = backup.drill_schedule
    if slot is None or schedule is None:
        return None
    return DrillSlot(slot, schedule.next_after(now), queue=not has_open_drill)
