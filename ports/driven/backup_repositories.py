"""Repository ports of backups and what they make: runs, artifacts, restores. Every look-up
takes the workspace id (tenant scoping inside the query), but for the few across
workspaces that background jobs make; errors as in ``repositories``."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from strongroom.domain.artifacts import Artifact, ArtifactStorage
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.restores import Restore
from strongroom.domain.runs import Run, RunState


class BackupRepository(Protocol):
    """Backups, always looked up inside one workspace."""

    async def add(self, backup: Backup) -> None:
        """Store a new backup; ``NameTakenError`` if its name is used (case-insensitively)."""
        ...

    async def add_counted(self, backup: Backup, event: AuditEvent, usage_below: int | None) -> bool:
        """Store ``backup`` and its audit ``event`` if its workspace's backup count is still
        below ``usage_below`` (None: whatever it is): the compare-and-set that keeps a
        decision taken on a count read before exact under concurrency. False, with nothing
        stored, when the count has reached it (or the workspace is gone); the caller reads
        again and decides again. ``NameTakenError`` for a name in use.

        As the unit's first write, adapters may commit it at once, as a transaction of its
        own (one round trip on PostgreSQL); the unit's commit then has nothing to do. Run
        again after its answer was lost, it writes nothing twice and answers True.
        """
        ...

    async def get(
        self, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
    ) -> Backup | None:
        """A backup of this workspace; ``for_update`` locks it until the unit of work ends."""
        ...

    async def update(self, backup: Backup) -> None:
        """Store a changed backup; ``NameTakenError`` if its new name is used."""
        ...

    async def remove(self, workspace_id: UUID, backup_id: UUID) -> None:
        """Delete a backup."""
        ...

    async def list(
        self, workspace_id: UUID, page: PageRequest, worker_id: UUID | None = None
    ) -> Page[Backup]:
        """A workspace's backups, newest first; with ``worker_id``, only those assigned to
        that worker."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many backups a workspace has (its usage counter: exact, one row)."""
        ...

    async def due(self, now: datetime, limit: int) -> Sequence[Backup]:
        """Scheduled backups (active, unpaused, with a schedule) of every workspace whose
        ``next_run_at`` is at or before ``now``, soonest first (at most ``limit``); the cost
        grows with the number due, not with the number of backups."""
        ...

    async def advance_schedule(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_run_at: datetime
    ) -> bool:
        """Compare-and-set: the backup's ``next_run_at`` becomes ``next_run_at`` if it is
        still ``expected`` (and the backup locked until the unit of work ends); False, and
        nothing changed, when another unit moved it first or the backup is gone. Of
        concurrent units advancing the same slot, exactly one gets True."""
        ...


class RunRepository(Protocol):
    """Runs of backups, always looked up inside one workspace; a backup's removal takes its
    runs with it."""

    async def add(self, run: Run) -> None:
        """Store a new run (its backup must exist in its workspace)."""
        ...

    async def get(
        self, workspace_id: UUID, run_id: UUID, *, for_update: bool = False
    ) -> Run | None:
        """A run of this workspace; ``for_update`` locks it until the unit of work ends."""
        ...

    async def update(self, run: Run) -> None:
        """Store a changed run (its state, times, counts, attempt, lease, cancel request
        and progress)."""
        ...

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, state: RunState | None, page: PageRequest
    ) -> Page[Run]:
        """A backup's runs, newest first; only those in ``state`` when it is given. A backup
        of another workspace has none here."""
        ...

    async def lease_expired(self, now: datetime, limit: int) -> list[Run]:
        """Running runs of every workspace whose lease ran out by ``now``, soonest expiry
        first (at most ``limit``)."""
        ...

    async def left_manual(self, announced_before: datetime, limit: int) -> list[Run]:
        """Running manual runs of every workspace that have pending artifacts, none of them
        announced after ``announced_before``; oldest run first (at most ``limit``)."""
        ...

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether the backup has a ``queued`` or ``running`` run."""
        ...

    async def announce_queued(self, workspace_id: UUID, worker_id: UUID | None) -> None:
        """Say that the workspace has new queued work for ``worker_id`` (None: the
        service's), to the waiters of every process, when (and only if) the unit of work
        commits. PostgreSQL notifies listeners inside the transaction; adapters serving
        one process do nothing (the use case's ``RunSignals`` wakes its own process after
        the commit)."""
        ...

    async def workers_with_queued(
        self, waiting: Collection[tuple[UUID, UUID]]
    ) -> set[tuple[UUID, UUID]]:
        """Which of the ``waiting`` (workspace id, worker id) pairs have a ``queued`` run
        of a backup assigned to that worker: every waiting claim of a process re-checked
        in one statement."""
        ...

    async def next_queued(self, workspace_id: UUID, worker_id: UUID) -> Run | None:
        """The oldest ``queued`` run of a backup assigned to ``worker_id``, locked until the
        unit of work ends; a run another unit of work holds locked is skipped, so
        concurrent claimers never get the same run."""
        ...

    async def next_queued_cloud(self) -> Run | None:
        """The oldest ``queued`` run of a cloud backup in any workspace (the service's own
        executors claim them), locked until the unit of work ends; runs another unit of
        work holds locked are skipped, as in ``next_queued``."""
        ...


class RestoreRepository(Protocol):
    """Restores of artifacts (contract 11), always looked up inside one workspace, but for
    the runner's pick of the next queued one; an artifact's removal takes its restores."""

    async def add(self, restore: Restore) -> None:
        """Store a new restore (its artifact must exist in its workspace)."""
        ...

    async def get(
        self, workspace_id: UUID, restore_id: UUID, *, for_update: bool = False
    ) -> Restore | None:
        """A restore of this workspace; ``for_update`` locks it until the unit of work ends."""
        ...

    async def update(self, restore: Restore) -> None:
        """Store a changed restore (state, times, error, sealed credentials)."""
        ...

    async def next_queued(self) -> Restore | None:
        """The oldest ``queued`` restore of any workspace, locked until the unit of work
        ends; one another unit of work holds locked is skipped, so concurrent runners
        never take the same restore."""
        ...

    async def lease_expired(self, now: datetime, limit: int) -> list[Restore]:
        """``running`` restores of every workspace whose lease ran out by ``now``, soonest
        expiry first (at most ``limit``)."""
        ...


class ArtifactRepository(Protocol):
    """Artifacts of runs, always looked up inside one workspace (the retention job's
    ``expired`` is the one look-up across workspaces); deleted ones keep their record."""

    async def add(self, artifact: Artifact) -> None:
        """Store a new artifact; its run must be a run of its backup in its workspace, and
        its name unused in the run."""
        ...

    async def get(
        self, workspace_id: UUID, artifact_id: UUID, *, for_update: bool = False
    ) -> Artifact | None:
        """An artifact of this workspace; ``for_update`` locks it until the unit of work
        ends."""
        ...

    async def update(self, artifact: Artifact) -> None:
        """Store a changed artifact (state, upload, expiry, lock and verification; the size
        and sha256 too while it was pending: the service learns them when its own stream
        ends)."""
        ...

    async def find_in_run(self, workspace_id: UUID, run_id: UUID, name: str) -> Artifact | None:
        """The artifact of this name in a run."""
        ...

    async def list_for_run(self, workspace_id: UUID, run_id: UUID) -> list[Artifact]:
        """Every artifact of a run, oldest first."""
        ...

    async def count_available(self, workspace_id: UUID, backup_id: UUID) -> int:
        """How many available artifacts a backup has."""
        ...

    async def any_locked(
        self,
        workspace_id: UUID,
        now: datetime,
        *,
        backup_id: UUID | None = None,
        storage: ArtifactStorage | None = None,
    ) -> bool:
        """Whether an available artifact (of a backup, in a storage) is locked at ``now``."""
        ...

    async def storage_bytes(self, workspace_id: UUID, *, with_pending: bool = False) -> int:
        """Total size of the available (and pending) artifacts in service storage."""
        ...

    async def expired(self, now: datetime, limit: int) -> list[Artifact]:
        """Available artifacts of every workspace whose expiry has passed, oldest first:
        not held, and of backups not ``decided_run_by_run`` (keep rules, snapshots)."""
        ...

    async def to_verify(
        self, limit: int, verified_before: datetime | None = None
    ) -> list[Artifact]:
        """Available artifacts of every workspace whose verification is pending, then,
        with ``verified_before``, those never verified or last verified before it, least
        recently verified (or created) first."""
        ...

    async def list(self, workspace_id: UUID, deleted: bool, page: PageRequest) -> Page[Artifact]:
        """A workspace's artifacts, newest first: deleted ones only, or every other."""
        ...

    async def get_many(
        self, workspace_id: UUID, artifact_ids: Collection[UUID]
    ) -> dict[UUID, Artifact]:
        """The artifacts of this workspace among ``artifact_ids``, by id (one not found is
        absent), in one look-up."""
        ...

    async def lock_until(
        self, workspace_id: UUID, artifact_ids: Collection[UUID], until: datetime
    ) -> None:
        """Set these artifacts' ``locked_until`` to ``until`` (the domain chose them: those
        whose lock was shorter)."""
        ...

    async def add_references(
        self, workspace_id: UUID, run_id: UUID, artifact_ids: Collection[UUID]
    ) -> None:
        """Record that a run's snapshot references these artifacts (each pair once; one
        recorded already stays)."""
        ...

    async def references_of_backup(
        self, workspace_id: UUID, backup_id: UUID
    ) -> dict[UUID, frozenset[UUID]]:
        """For each run of a backup whose snapshot references artifacts, their ids."""
        ...

    async def referrers(self, workspace_id: UUID, artifact_id: UUID) -> dict[UUID, int]:
        """The runs whose snapshots reference an artifact, each with its number of
        available artifacts."""
        ...
