"""Cloud runs, executed by the service itself (contract 11), as use cases.

The service's executors go through the worker's lifecycle: claim a queued run with a
lease, heartbeat it (extending the lease, recording progress, learning of a cancel), fail
it, or write its artifact and confirm it exactly as a client's upload is confirmed. They
hold no credential: every step is done, and audited, by the ``system`` actor
(``run.claim``, ``artifact.create``, ``run.confirm``, ``run.fail``, ``run.cancel``), and a
claimed cloud run keeps ``worker_id: null``.

Which executor holds a run is told by its attempt and start: a run whose lease expired
was requeued (``attempt + 1``) and may be claimed again elsewhere, so every later step
first checks that the run is still the one claimed (``HeldRun``) and otherwise raises
``LostRunError``: the executor stops without touching it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime, timedelta

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.backups import Backup
from strongroom.domain.billing import GatedOperation, ensure_allowed
from strongroom.domain.drills import TableFacts
from strongroom.domain.errors import InvalidStateError
from strongroom.domain.events import changed, created
from strongroom.domain.executions import artifact_name, cloud_source
from strongroom.domain.quotas import QuotaResource, ensure_room
from strongroom.domain.runs import LEASE, Progress, Run, RunState
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driven.sources import SourceReaders
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_run
from strongroom.ports.driving.recording import by_system

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


class LostRunError(Exception):
    """The run is no longer held by this executor (finished, or requeued after its lease
    expired); the executor stops working on it."""


@attrs.frozen
class HeldRun:
    """A run as this executor claimed it: the attempt and start that identify its hold."""

    run: Run
    backup: Backup

    def holds(self, current: Run | None) -> bool:
        """Whether ``current`` (the stored run) is still this executor's attempt."""
        return (
            current is not None
            and current.state is RunState.RUNNING
            and current.attempt == self.run.attempt
            and current.started_at == self.run.started_at
        )


class ServiceRuns:
    """The service executor's use cases over cloud runs; see the module documentation."""

    def __init__(self, deps: Dependencies, artifacts: Artifacts, lease: timedelta = LEASE) -> None:
        self._deps = deps
        self._artifacts = artifacts
        self.lease = lease

    def with_lease(self, lease: timedelta) -> ServiceRuns:
        """The same use cases claiming and extending leases of ``lease``."""
        return ServiceRuns(self._deps, self._artifacts, lease)

    def wakeup(self) -> Wakeup:
        """A ticket for the next announcement of the service's work (a cloud run
        triggered, scheduled or requeued; a restore; a drill) in any workspace: take it
        before looking, then wait on it."""
        return self._deps.signals.watch_any()

    async def claim(self) -> HeldRun | None:
        """The oldest queued cloud run of any workspace, now ``running`` with a lease (no
        worker); None when none is queued. Never refused for billing (contract 11)."""
        async with self._deps.uow() as uow:
            found = await uow.runs.next_queued_cloud()
            if found is None:
                return None
            claimed = found.claim(None, self._deps.clock.now(), self.lease)
            await uow.runs.update(claimed)
            backup = await lookups.backup(uow, claimed.workspace_id, claimed.backup_id)
            uow.collect(
                by_system(self._deps, claimed.workspace_id, changed("run.claim", found, claimed))
            )
            await uow.commit()
        return HeldRun(claimed, backup)

    async def _held(self, uow: UnitOfWork, held: HeldRun) -> Run:
        current = await uow.runs.get(held.run.workspace_id, held.run.id, for_update=True)
        if current is None or not held.holds(current):
            raise LostRunError(f"run {held.run.id} is no longer held by this executor")
        return current

    async def heartbeat(self, held: HeldRun, progress: Progress | None = None) -> Run:
        """Extend the lease and record ``progress``; a run whose cancel was requested is
        ``cancelled`` now (its pending artifacts aborted, audited ``run.cancel``)."""
        async with self._deps.uow() as uow:
            run = await self._held(uow, held)
            beaten = run.heartbeat(self._deps.clock.now(), progress, self.lease)
            await uow.runs.update(beaten)
            if beaten.state is RunState.CANCELLED:
                await self._artifacts.abort_pending(uow, beaten)
                uow.collect(
                    by_system(self._deps, run.workspace_id, changed("run.cancel", run, beaten))
                )
            await uow.commit()
        return beaten

    async def fail(self, held: HeldRun, error: str) -> Run:
        """The run ``failed`` with ``error`` (``cancelled`` when its cancel was requested),
        its pending artifacts aborted; audited ``run.fail`` (or ``run.cancel``)."""
        async with self._deps.uow() as uow:
            run = await self._held(uow, held)
            failed = run.fail(error[:2000] or "failed", self._deps.clock.now())
            await uow.runs.update(failed)
            await self._artifacts.abort_pending(uow, failed)
            await notify_run(self._deps, uow, failed)
            action = "run.cancel" if failed.state is RunState.CANCELLED else "run.fail"
            uow.collect(by_system(self._deps, run.workspace_id, changed(action, run, failed)))
            await uow.commit()
        return failed

    def read_source(self, held: HeldRun, readers: SourceReaders) -> AsyncIterator[bytes]:
        """The stream of the run's source; its credentials are opened here, in memory,
        and handed only to the reader."""
        backup = held.backup
        source = cloud_source(backup)
        assert backup.sealed_credentials is not None
        return readers.read(source, self._deps.secrets.open(backup.sealed_credentials))

    async def open_artifact(self, held: HeldRun) -> tuple[Artifact, ObjectStorage]:
        """The run's pending artifact (a new record, audited ``artifact.create``, or the
        one an earlier attempt of the run left, taken over afresh) and the storage its
        bytes go to."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            run = await self._held(uow, held)
            backup = await lookups.backup(uow, run.workspace_id, run.backup_id)
            workspace = await lookups.workspace(uow, run.workspace_id)
            name = artifact_name(backup, run)
            existing = await uow.artifacts.find_in_run(run.workspace_id, run.id, name)
            if existing is not None and existing.state is not ArtifactState.PENDING:
                raise InvalidStateError(f"artifact {name!r} of this run is {existing.state}")
            if existing is not None:
                artifact = attrs.evolve(existing, size=0, sha256=EMPTY_SHA256, upload_id=None)
                await uow.artifacts.update(artifact)
            else:
                artifact = self._artifacts.new_record(
                    workspace, backup, run, (name, 0, EMPTY_SHA256), now
                )
                await uow.artifacts.add(artifact)
                made = created("artifact.create", artifact)
                uow.collect(by_system(self._deps, run.workspace_id, made))
            await uow.commit()
        return artifact, self._artifacts.storage_for(artifact, backup)

    async def upload_started(self, held: HeldRun, artifact: Artifact, upload_id: str) -> None:
        """Record the multipart upload of the artifact (so that a failure aborts it)."""
        async with self._deps.uow() as uow:
            await self._held(uow, held)
            current = await uow.artifacts.get(artifact.workspace_id, artifact.id, for_update=True)
            if current is None or current.state is not ArtifactState.PENDING:
                raise LostRunError(f"artifact {artifact.id} is no longer pending")
            await uow.artifacts.update(attrs.evolve(current, upload_id=upload_id))
            await uow.commit()

    async def record_manifest(self, artifact: Artifact, manifest: Mapping[str, TableFacts]) -> None:
        """Keep what the source recorded of the artifact's content (a dump's tables), for
        restore drills to check against (contract 16)."""
        async with self._deps.uow() as uow:
            await uow.drills.record_manifest(artifact.workspace_id, artifact.id, manifest)
            await uow.commit()

    async def finish(self, held: HeldRun, artifact: Artifact, size: int, sha256: str) -> Run:
        """The artifact's size and sha256 recorded, then confirmed as a client's upload is
        (present with that size, and that sha256 where storage can tell; locked per the
        retention): the run ``succeeded``, audited ``run.confirm``. Refused like a client's
        upload when the workspace's billing state refuses uploads or ``storage_bytes``
        would be passed."""
        now: datetime = self._deps.clock.now()
        async with self._deps.uow() as uow:
            run = await self._held(uow, held)
            workspace = await lookups.workspace(uow, run.workspace_id, for_update=True)
            ensure_allowed(workspace.billing_state, GatedOperation.UPLOAD)
            current = await uow.artifacts.get(artifact.workspace_id, artifact.id, for_update=True)
            if current is None:
                raise LostRunError(f"artifact {artifact.id} is gone")
            written = current.written(size, sha256)
            limit = workspace.limit(QuotaResource.STORAGE_BYTES)
            # The usage is a sum over every artifact of the workspace, a cost that grows
            # with each run: only a set limit (0 is none) needs it.
            if written.storage is ArtifactStorage.SERVICE and limit:
                used = await uow.artifacts.storage_bytes(run.workspace_id, with_pending=True)
                ensure_room(QuotaResource.STORAGE_BYTES, limit, used - current.size, adding=size)
            await uow.artifacts.update(written)
            finished = await self._artifacts.confirm_pending(uow, run, now)
            confirmed = run.recorded_confirmation(finished)
            uow.collect(by_system(self._deps, run.workspace_id, confirmed))
            await uow.commit()
        return finished
