"""Restore drills (contract 16): ask the service to prove a backup restores, read how its
drills went, and the service-side runner that does the work.

``create`` records a ``queued`` drill of a cloud backup and wakes the runners. The runner
(``run_queued``, in ``serve`` and ``strongroom executor`` on a wake-up or every
``STRONGROOM_RESTORE_POLL`` seconds) takes one queued drill at a time (a locking read that
skips rows other runners hold), picks the backup's newest available artifact of a
succeeded run, marks the drill ``running`` and commits; then, outside any transaction, it
streams the artifact from storage into a scratch target the service owns
(``DrillTargets``), hashing it on the way, and compares what it restored with what was
recorded when the backup was made: the artifact's size and sha256; a ``postgres`` dump's
tables (rows and checksum, the manifest the source recorded); an ``s3`` archive's objects
(sha256, its own manifest). The drill ends ``succeeded`` or ``failed`` naming what
differs, audited ``drill.finish`` by ``system``. It never writes to the customer's
systems.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Mapping
from uuid import UUID

from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import Backup
from strongroom.domain.drills import (
    Drill,
    DrillState,
    TableFacts,
    check_drillable,
    object_problems,
    table_problems,
)
from strongroom.domain.errors import StrongroomError
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.runs import RunState
from strongroom.ports.driven.drills import DrillFailedError, DrillTargets, Restored
from strongroom.ports.driven.storage import ObjectReader
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving import lookups
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import record_by_system
from strongroom.ports.driving.threads import run_to_the_end

logger = logging.getLogger(__name__)

CREATE_DRILL = Requirement((Permission.BACKUPS_WRITE,), "drill.create")
READ_DRILL = Requirement((Permission.BACKUPS_READ,))
# Drills one call of the runner takes at most; succeeded runs looked at for an artifact.
BATCH = 10
RUNS_LOOKED_AT = 20
CHUNK = 1024 * 1024
UNEXPECTED = "the drill failed on an unexpected error of the service (logged)"
NO_TARGETS = "the service runs no restore drills (no scratch target is configured)"


def drill_snapshot(drill: Drill) -> dict[str, JsonValue]:
    """What the audit trail shows of a drill."""
    return {
        "backup_id": str(drill.backup_id),
        "run_id": None if drill.run_id is None else str(drill.run_id),
        "state": drill.state.value,
        "error": drill.error,
    }


class _Hashing:
    """An object stream that counts and hashes what is read through it."""

    def __init__(self, inner: ObjectReader) -> None:
        self._inner = inner
        self._digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._inner.read(size)
        self._digest.update(data)
        self.size += len(data)
        return data

    def close(self) -> None:
        """Closing is the runner's."""

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


class Drills:
    """Ask for and read drills; run the queued ones (the service's side)."""

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
            check_drillable(backup)
            drill = Drill.queued(self._deps.ids.new_id(), workspace_id, backup.id, now)
            await change.uow.drills.add(drill)
            await change.uow.runs.announce_queued(workspace_id)
            await change.done("drill.create", drill.id, diff({}, drill_snapshot(drill)))
        self._deps.signals.announce(workspace_id)
        return drill

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

    async def run_queued(self, limit: int = BATCH) -> list[Drill]:
        """Run queued drills one after another until none is left (at most ``limit``);
        the finished drills. Safe with any number of runners."""
        finished: list[Drill] = []
        for _ in range(limit):
            done = await self.run_next()
            if done is None:
                break
            finished.append(done)
        return finished

    async def run_next(self) -> Drill | None:
        """Take the oldest queued drill, run it and record how it ended; None when none
        is queued."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            queued = await uow.drills.next_queued()
            if queued is None:
                return None
            backup = await uow.backups.get(queued.workspace_id, queued.backup_id)
            artifact = None if backup is None else await _newest_artifact(uow, backup)
            if backup is None or artifact is None:
                broken = queued.broke("the backup has no available artifact to drill", now)
                await self._record(uow, queued, broken)
                await uow.commit()
                return broken
            running = queued.started(artifact.run_id, now)
            await uow.drills.update(running)
            await uow.commit()
        started = time.monotonic()
        problems, checks, restored_bytes, error = await self._execute(running, artifact, backup)
        seconds = time.monotonic() - started
        end = self._deps.clock.now()
        async with self._deps.uow() as uow:
            current = await uow.drills.get(running.workspace_id, running.id, for_update=True)
            if current is None or current.state is not DrillState.RUNNING:
                return current or running
            if error is not None:
                after = current.broke(error, end)
            else:
                after = current.finished(problems, checks, restored_bytes, seconds, end)
            await self._record(uow, current, after)
            await uow.commit()
        logger.info("drill %s of backup %s %s", after.id, after.backup_id, after.state.value)
        return after

    async def _record(self, uow: UnitOfWork, before: Drill, after: Drill) -> None:
        await uow.drills.update(after)
        await record_by_system(
            self._deps,
            uow,
            after.workspace_id,
            "drill.finish",
            after.id,
            diff(drill_snapshot(before), drill_snapshot(after)),
        )

    async def _execute(
        self, drill: Drill, artifact: Artifact, backup: Backup
    ) -> tuple[list[str], dict[str, JsonValue], int, str | None]:
        """Restore into scratch and compare: the problems, the checks, the bytes restored,
        or why the drill could not check anything."""
        if self.targets is None:
            return [], {}, 0, NO_TARGETS
        try:
            source_type = check_drillable(backup)
            storage = self._artifacts.storage_for(artifact, backup)
            opened = await run_to_the_end(
                functools.partial(storage.open_object, artifact.object_key), _close_if_opened
            )
            if opened is None:
                return [], {}, 0, "the artifact's object is missing from storage"
            reader = _Hashing(opened)
            try:
                restored = await self.targets.restore(reader, source_type)
                await run_to_the_end(reader.drain)
            finally:
                await run_to_the_end(opened.close)
            async with self._deps.uow() as uow:
                manifest = await uow.drills.manifest(drill.workspace_id, artifact.id)
        except DrillFailedError as failed:
            return [], {}, 0, str(failed)
        except StrongroomError as failed:
            return [], {}, 0, failed.message
        except Exception:
            logger.exception("drill %s of workspace %s failed", drill.id, drill.workspace_id)
            return [], {}, 0, UNEXPECTED
        problems: list[str] = []
        intact = (reader.size, reader.sha256) == (artifact.size, artifact.sha256)
        if not intact:
            problems.append("the artifact's bytes differ from its recorded size and sha256")
        checks: dict[str, JsonValue] = {"artifact_id": str(artifact.id), "artifact_intact": intact}
        checks.update(_compare(restored, manifest, problems))
        return problems, checks, restored.bytes, None


def _compare(
    restored: Restored, manifest: Mapping[str, TableFacts] | None, problems: list[str]
) -> dict[str, JsonValue]:
    """Add what differs to ``problems``; the checks made, in counts."""
    if restored.tables is not None:
        if manifest is None:
            problems.append("no manifest of the tables was recorded when the backup was made")
            return {"tables": len(restored.tables), "tables_recorded": False}
        found = table_problems(manifest, restored.tables)
        problems.extend(found)
        return {
            "tables": len(restored.tables),
            "rows": sum(facts.rows for facts in restored.tables.values()),
            "tables_differing": len(found),
        }
    objects = restored.objects or {}
    if restored.listed is None:
        problems.append("the archive's manifest records no sha256 (made before drills)")
        return {"objects": len(objects), "sha256_recorded": False}
    found = object_problems(restored.listed, objects)
    problems.extend(found)
    return {"objects": len(objects), "objects_differing": len(found)}


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


def _close_if_opened(opened: ObjectReader | None) -> None:
    if opened is not None:
        opened.close()
