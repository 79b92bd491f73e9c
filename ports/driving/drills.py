"""Restore drills (contract 16): ask the service to prove a backup restores, read how its
drills went, and the steps of the service's drill runner (``adapters/runtime/drills``).

``create`` records a ``queued`` drill of a cloud backup and wakes the runners;
``schedule_due`` does the same at each due slot of a backup's ``drill.schedule`` (one per
slot across instances: a compare-and-set of ``next_drill_at``). A runner
takes one queued drill at a time (``take_next``: a locking read that skips rows other
runners hold), on the backup's newest available artifact of a succeeded run, marks it
``running`` and commits; then, outside any transaction, streams the artifact into a
scratch target the service owns (``DrillTargets``), hashing it, and ``judge`` compares
what was restored with what was recorded when the backup was made: the artifact's size
and sha256; a ``postgres`` dump's tables (rows and checksum, the manifest the source
recorded); an ``s3`` archive's objects (sha256, its own manifest). ``finish`` records
``succeeded`` or ``failed`` naming what differs, audited ``drill.finish`` by ``system``.
A drill never writes to the customer's systems.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import Backup
from strongroom.domain.drills import (
    DRILL_TIMEOUT,
    INTERRUPTED,
    Drill,
    DrillState,
    TableFacts,
    check_drillable,
    decide_drill_slot,
    object_problems,
    table_problems,
)
from strongroom.domain.errors import StrongroomError
from strongroom.domain.events import Recorded, changed, created
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.runs import RunState
from strongroom.ports.driven.drills import DrillTargets, Restored
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_drill
from strongroom.ports.driving.recording import by_system

logger = logging.getLogger(__name__)

CREATE_DRILL = Requirement((Permission.BACKUPS_WRITE,), "drill.create")
READ_DRILL = Requirement((Permission.BACKUPS_READ,))
# Succeeded runs looked at, newest first, for an available artifact.
RUNS_LOOKED_AT = 20
STALE_BATCH = 10
# Backups with a due drill slot looked at per look.
SCHEDULE_BATCH = 500
NOTHING_TO_DRILL = "the backup has no available artifact to drill"


@attrs.frozen
class DrillSource:
    """What a runner restores for a drill: the artifact, where it is stored, the backup's
    source type, and the scratch targets."""

    artifact: Artifact
    storage: ObjectStorage
    source_type: str
    targets: DrillTargets


@attrs.frozen
class Outcome:
    """How a drill's restore went: the differences found, the checks made, the bytes
    restored, and how long it took; or why nothing could be checked (``error``)."""

    problems: list[str] = attrs.field(factory=list)
    checks: Mapping[str, JsonValue] = attrs.field(factory=dict)
    restored_bytes: int = 0
    seconds: float = 0.0
    error: str | None = None


@attrs.frozen
class DrillScheduleReport:
    """What one pass of the drill scheduler did."""

    scheduled: int = 0
    skipped: int = 0
    # Slots another instance (or a change of the backup) took first.
    taken: int = 0
    errors: int = 0


class Drills:
    """Ask for and read drills; the steps of the service's runner."""

    def __init__(
        self,
        deps: Dependencies,
        access: Access,
        artifacts: Artifacts,
        targets: DrillTargets | None = None,
    ) -> None:
        self._deps = deps
        self._access = access
        self._artifacts = artifacts
        self.targets = targets

    async def create(self, caller: Caller | Grant, backup_id: UUID) -> Drill:
        """``POST /v1/backups/{bid}/drills``: a ``queued`` drill of the backup. Needs
        ``backups:write``. Refused: a backup not in the workspace (404); a local or manual
        backup, or one without an s3 or postgres source (422 ``validation_failed``).
        Audited as ``drill.create``."""
        caller, workspace_id = await self._access.resolve(caller, CREATE_DRILL, target_id=backup_id)
        now = self._deps.clock.now()
        async with changing(self._deps, caller, workspace_id) as change:
            backup = lookups.visible_backup(
                caller, await lookups.backup(change.uow, workspace_id, backup_id)
            )
            drill = await self._queue(change.uow, backup, now)
            change.collect(created("drill.create", drill))
        self._deps.signals.announce(workspace_id, None)
        return drill

    async def _queue(self, uow: UnitOfWork, backup: Backup, now: datetime) -> Drill:
        """A ``queued`` drill of a drillable ``backup`` (``check_drillable``), added in
        ``uow`` with the announcement that wakes the runners: the one way a drill is
        asked for, by a person (``create``) or by a slot (``schedule_due``)."""
        check_drillable(backup)
        drill = Drill.queued(self._deps.ids.new_id(), backup.workspace_id, backup.id, now)
        await uow.drills.add(drill)
        # Drill runners wait on the run signals' channel (``wakeup``).
        await uow.runs.announce_queued(backup.workspace_id, None)
        return drill

    async def schedule_due(
        self, now: datetime | None = None, batch: int = SCHEDULE_BATCH
    ) -> DrillScheduleReport:
        """Queue one drill for every drill slot due at ``now`` (``drill.schedule`` by
        ``system``), or skip it while a drill of the backup is queued or running
        (``drill.skip``, ``reason: "overlap"``); each slot's ``next_drill_at`` moves past
        ``now``. Each slot starts with a compare-and-set of ``next_drill_at``, as the run
        scheduler's slots do: with any number of instances, one drill per slot."""
        now = now or self._deps.clock.now()
        counts = {"scheduled": 0, "skipped": 0, "taken": 0, "errors": 0}
        while True:
            async with self._deps.uow() as uow:
                due = await uow.drills.due_backups(now, batch)
            handled = 0
            for backup in due:
                try:
                    outcome = await self._drill_slot(backup, now)
                except StrongroomError:
                    logger.exception("could not queue the drill of backup %s", backup.id)
                    outcome = "errors"
                counts[outcome] += 1
                handled += outcome in ("scheduled", "skipped")
            # Errors or slots taken by others may leave the batch full of the same rows.
            if len(due) < batch or handled == 0:
                break
        report = DrillScheduleReport(**counts)
        if report != DrillScheduleReport():
            logger.info("drill scheduler: %s", report)
        return report

    async def _drill_slot(self, seen: Backup, now: datetime) -> str:
        """One due backup's drill slot: ``scheduled``, ``skipped`` or ``taken``."""
        slot, schedule = seen.next_drill_at, seen.drill_schedule
        if slot is None or schedule is None:
            return "taken"
        workspace_id = seen.workspace_id
        async with self._deps.uow() as uow:
            # First the compare-and-set: it locks the backup, so rivals and a concurrent
            # change wait, and the reads below see what this slot decides on.
            following = schedule.next_after(now)
            if not await uow.drills.advance_backup(workspace_id, seen.id, slot, following):
                return "taken"
            backup = await uow.backups.get(workspace_id, seen.id)
            if backup is None:
                return "taken"
            has_open = await uow.drills.has_open(workspace_id, backup.id)
            decision = decide_drill_slot(attrs.evolve(backup, next_drill_at=slot), now, has_open)
            if decision is None:
                return "taken"  # no longer drilled; rolled back with the unit
            at = decision.slot.isoformat()
            if decision.queue:
                drill = await self._queue(uow, backup, now)
                uow.collect(
                    by_system(self._deps, workspace_id, created("drill.schedule", drill, slot=at))
                )
            else:
                changes = diff({}, {"backup_id": str(backup.id), "reason": "overlap", "slot": at})
                skipped = Recorded("drill.skip", backup.id, changes, target_type="backup")
                uow.collect(by_system(self._deps, workspace_id, skipped))
            await uow.commit()
        if decision.queue:
            self._deps.signals.announce(workspace_id, None)
            return "scheduled"
        return "skipped"

    async def list_for_backup(
        self, caller: Caller | Grant, backup_id: UUID, page: PageRequest
    ) -> Page[Drill]:
        """``GET /v1/backups/{bid}/drills``: a backup's drills, newest first (404 for a
        backup the caller cannot see)."""
        caller, workspace_id = await self._access.resolve(caller, READ_DRILL)
        async with self._deps.uow() as uow:
            lookups.visible_backup(caller, await lookups.backup(uow, workspace_id, backup_id))
            return await uow.drills.list_for_backup(workspace_id, backup_id, page)

    # ----------------------------------------------------------------------------------
    # The service's side

    def wakeup(self) -> Wakeup:
        """A ticket for the next announcement of queued work in any workspace."""
        return self._deps.signals.watch_any()

    async def expire_stale(self, limit: int = STALE_BATCH) -> int:
        """Fail as interrupted the drills running longer than ``DRILL_TIMEOUT`` (their
        runner stopped); how many. Audited ``drill.finish`` by ``system``."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            stale = await uow.drills.started_before(now - DRILL_TIMEOUT, limit)
        count = 0
        for candidate in stale:
            async with self._deps.uow() as uow:
                current = await uow.drills.get(
                    candidate.workspace_id, candidate.id, for_update=True
                )
                if current is None or not current.stale(now):
                    continue
                await self._record(uow, current, current.broke(INTERRUPTED, now))
                await uow.commit()
            logger.warning("drill %s was interrupted (its runner stopped)", current.id)
            count += 1
        return count

    async def take_next(self) -> tuple[Drill, DrillSource | None] | None:
        """The oldest queued drill, now ``running`` on its backup's newest available
        artifact and committed, with what to restore; a drill with nothing to restore
        comes back ``failed`` (and None for its source). None when none is queued."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            queued = await uow.drills.next_queued()
            if queued is None:
                return None
            backup = await uow.backups.get(queued.workspace_id, queued.backup_id)
            artifact = None if backup is None else await _newest_artifact(uow, backup)
            if backup is None or artifact is None or self.targets is None:
                why = "the service runs no restore drills" if self.targets is None else None
                broken = queued.broke(why or NOTHING_TO_DRILL, now)
                await self._record(uow, queued, broken)
                await uow.commit()
                return broken, None
            running = queued.started(artifact.run_id, now)
            await uow.drills.update(running)
            await uow.commit()
        source = DrillSource(
            artifact=artifact,
            storage=self._artifacts.storage_for(artifact, backup),
            source_type=check_drillable(backup),
            targets=self.targets,
        )
        return running, source

    async def manifest(self, drill: Drill, artifact: Artifact) -> dict[str, TableFacts] | None:
        """What the source recorded of the artifact's content when it was made."""
        async with self._deps.uow() as uow:
            return await uow.drills.manifest(drill.workspace_id, artifact.id)

    async def finish(self, running: Drill, outcome: Outcome) -> Drill:
        """Record how the drill ended under the row lock; the drill as it then is."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            current = await uow.drills.get(running.workspace_id, running.id, for_update=True)
            if current is None or current.state is not DrillState.RUNNING:
                return current or running
            if outcome.error is not None:
                after = current.broke(outcome.error, now)
            else:
                after = current.finished(
                    outcome.problems, outcome.checks, outcome.restored_bytes, outcome.seconds, now
                )
            await self._record(uow, current, after)
            await uow.commit()
        logger.info("drill %s of backup %s %s", after.id, after.backup_id, after.state.value)
        return after

    async def _record(self, uow: UnitOfWork, before: Drill, after: Drill) -> None:
        await uow.drills.update(after)
        await notify_drill(self._deps, uow, after)
        uow.collect(
            by_system(self._deps, after.workspace_id, changed("drill.finish", before, after))
        )


def judge(
    artifact: Artifact,
    read: tuple[int, str],
    restored: Restored,
    manifest: Mapping[str, TableFacts] | None,
) -> tuple[list[str], dict[str, JsonValue]]:
    """What differs between what was restored (and ``read``: the size and sha256 of the
    bytes streamed) and what was recorded; the checks made, in counts."""
    problems: list[str] = []
    intact = read == (artifact.size, artifact.sha256)
    if not intact:
        problems.append("the artifact's bytes differ from its recorded size and sha256")
    checks: dict[str, JsonValue] = {"artifact_id": str(artifact.id), "artifact_intact": intact}
    if restored.tables is not None:
        if manifest is None:
            problems.append("no manifest of the tables was recorded when the backup was made")
            return problems, {**checks, "tables": len(restored.tables), "tables_recorded": False}
        differing = table_problems(manifest, restored.tables)
        problems.extend(differing)
        return problems, {
            **checks,
            "tables": len(restored.tables),
            "rows": sum(facts.rows for facts in restored.tables.values()),
            "tables_differing": len(differing),
        }
    objects = restored.objects or {}
    if restored.listed is None:
        problems.append("the archive's manifest records no sha256 (made before drills)")
        return problems, {**checks, "objects": len(objects), "sha256_recorded": False}
    differing = object_problems(restored.listed, objects)
    problems.extend(differing)
    return problems, {**checks, "objects": len(objects), "objects_differing": len(differing)}


async def _newest_artifact(uow: UnitOfWork, backup: Backup) -> Artifact | None:
    """The newest available artifact of the backup's succeeded runs."""
    runs = await uow.runs.list_for_backup(
        backup.workspace_id, backup.id, RunState.SUCCEEDED, PageRequest(limit=RUNS_LOOKED_AT)
    )
    for run in runs.items:
        artifacts = await uow.artifacts.list_for_run(backup.workspace_id, run.id)
        available = [a for a in artifacts if a.state is ArtifactState.AVAILABLE]
        if available:
            return available[-1]
    return None
