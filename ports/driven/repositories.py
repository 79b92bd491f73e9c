"""Repository ports. Every look-up of a workspace's object takes the workspace id, so that
tenant scoping happens inside the query itself and never after it.

Adapters raise ``NameTakenError`` for unique-name violations, ``IdempotencyKeyTakenError``
when an Idempotency-Key is already reserved, and ``UpstreamUnavailableError`` when their
store fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.artifacts import Artifact, ArtifactStorage
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup
from strongroom.domain.invitations import Invitation
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission, Role
from strongroom.domain.principals import Session
from strongroom.domain.restores import Restore
from strongroom.domain.runs import Run, RunState
from strongroom.domain.users import User
from strongroom.domain.workspaces import (
    Admission,
    Member,
    Membership,
    MemberWorkspace,
    Workspace,
)


class IdempotencyKeyTakenError(Exception):
    """Another request already reserved this Idempotency-Key (port-level, never shown)."""


class WorkspaceRepository(Protocol):
    """Workspaces."""

    async def add(self, workspace: Workspace) -> None:
        """Store a new workspace."""
        ...

    async def get(self, workspace_id: UUID, *, for_update: bool = False) -> Workspace | None:
        """A workspace by id; ``for_update`` locks it until the unit of work ends
        (serialises quota checks)."""
        ...

    async def update(self, workspace: Workspace) -> None:
        """Store a changed workspace."""
        ...

    async def remove(self, workspace_id: UUID) -> None:
        """Delete a workspace and every record of it: members, backups, audit, credentials."""
        ...

    async def count_created_by(self, user_id: UUID) -> int:
        """How many existing workspaces ``user_id`` created."""
        ...


class MembershipRepository(Protocol):
    """Who belongs to which workspace, with which role."""

    async def add(self, membership: Membership) -> None:
        """Store a membership."""
        ...

    async def get(self, workspace_id: UUID, user_id: UUID) -> Membership | None:
        """One person's membership of a workspace."""
        ...

    async def list_for_user(self, user_id: UUID, page: PageRequest) -> Page[MemberWorkspace]:
        """The workspaces a person belongs to, newest workspace first."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many members a workspace has."""
        ...

    async def list_members(self, workspace_id: UUID, page: PageRequest) -> Page[Member]:
        """A workspace's members with their email and name, newest first (by joining time)."""
        ...

    async def update(self, membership: Membership) -> None:
        """Store a member's new role (the joining time never changes)."""
        ...

    async def remove(self, workspace_id: UUID, user_id: UUID) -> None:
        """End a membership (nothing happens when there is none)."""
        ...

    async def count_with_role(self, workspace_id: UUID, role: str) -> int:
        """How many members of a workspace hold ``role``."""
        ...


class UserRepository(Protocol):
    """People."""

    async def add(self, user: User) -> None:
        """Store a new person."""
        ...

    async def get(self, user_id: UUID, *, for_update: bool = False) -> User | None:
        """A person by id; ``for_update`` locks them until the unit of work ends
        (serialises per-user quotas)."""
        ...

    async def get_by_subject(self, subject: str) -> User | None:
        """A person by their identity provider subject."""
        ...


@attrs.frozen
class SessionGrant:
    """A session with everything needed to authorise its requests, found in one look-up."""

    session: Session
    user: User
    role: Role | None


@attrs.frozen
class Rendered:
    """An answer already in the API's JSON form, as the store wrote it (a read model): the
    HTTP adapter sends ``body`` as it is, byte for byte what its presenter would write."""

    body: bytes


class SessionRepository(Protocol):
    """People's sessions."""

    async def add(self, session: Session) -> None:
        """Store a new session."""
        ...

    async def find(self, token_hash: str) -> SessionGrant | None:
        """The session with this token hash, its user and their role in its workspace."""
        ...

    async def find_with_backup(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Backup | None] | None:
        """``find``, and the backup with this id of the session's workspace, in one look-up:
        the credential check joined into the read (the read is scoped by the session)."""
        ...

    async def find_with_backups(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Page[Backup]] | None:
        """``find``, and a page of ``workspace_id``'s backups (as ``BackupRepository.list``)
        when it is the session's workspace, else an empty page, in one look-up."""
        ...

    async def find_with_backup_json(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Rendered | None] | None:
        """``find_with_backup`` with the backup as the API's JSON (its wire shape) instead
        of a ``Backup``: what ``GET /v1/backups/{id}`` answers, rendered by the store."""
        ...

    async def find_with_backups_json(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Rendered] | None:
        """``find_with_backups`` with the page as the API's JSON (``{"data": [...],
        "next_cursor": ...}``) instead of a ``Page``, rendered by the store."""
        ...

    async def find_adding_backup(
        self, token_hash: str, backup: Backup, event: AuditEvent, admission: Admission
    ) -> tuple[SessionGrant, bool] | None:
        """``find``, and ``BackupRepository.add_admitted`` of ``backup`` and ``event`` in
        one look-up, the add only into the session's own workspace and the event's actor
        the session's person (the credential check joined into the write).

        Nothing is visible before the unit commits: commit only once the grant authorizes
        the create. None when there is no such session (and nothing was added).
        """
        ...

    async def create_backup(
        self,
        token_hash: str,
        backup: Backup,
        event: AuditEvent,
        admission: Admission,
        permissions: Sequence[Permission],
        now: datetime,
    ) -> bool:
        """Add ``backup`` and ``event`` (its actor the session's person) only if the
        session of ``token_hash`` would authorize the create and the workspace admits it,
        decided in the write itself: the session is live at ``now``, scoped to the
        backup's workspace, its person's role there (built-in or custom) holds one of
        ``permissions``; the workspace's billing state and backups quota admit one more
        (``admission``). False, with nothing written, otherwise (the caller finds out why
        with the ordinary checks). ``NameTakenError`` for a name in use.

        Adapters may commit it at once, as a transaction of its own (one round trip on
        PostgreSQL): it must be the unit's first write, and the unit's commit follows.
        """
        ...

    async def revoke(self, session_id: UUID, at: datetime) -> None:
        """End a session."""
        ...


class BackupRepository(Protocol):
    """Backups, always looked up inside one workspace."""

    async def add(self, backup: Backup) -> None:
        """Store a new backup; ``NameTakenError`` if its name is used (case-insensitively)."""
        ...

    async def add_admitted(self, backup: Backup, event: AuditEvent, admission: Admission) -> bool:
        """Store ``backup`` and its audit ``event`` if its workspace admits one more backup
        (``admission``'s billing states and the backups quota, checked on the workspace's
        current row, exactly under concurrency). False when nothing was stored (no such
        workspace, or it refuses). Adapters may do it in one round trip.
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

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether the backup has a ``queued`` or ``running`` run."""
        ...

    async def announce_queued(self, workspace_id: UUID) -> None:
        """Say that the workspace has new queued runs, to waiting claims of every process,
        when (and only if) the unit of work commits. PostgreSQL notifies listeners inside
        the transaction; adapters serving one process do nothing (the use case's
        ``RunSignals`` wakes its own process after the commit)."""
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
        """Available artifacts of every workspace whose expiry has passed, oldest first."""
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


class WorkerRepository(Protocol):
    """Machine executors of local backups."""

    async def add(self, worker: Worker) -> None:
        """Store a new worker."""
        ...

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        """Whether this workspace has this worker."""
        ...

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        """A worker of this workspace."""
        ...

    async def find(self, token_hash: str) -> Worker | None:
        """The worker whose current credential has this hash."""
        ...

    async def update(self, worker: Worker) -> None:
        """Store a changed worker (a rotated credential)."""
        ...

    async def touch(self, worker_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Set ``last_seen_at`` to ``at`` unless it is already at or after ``stale_before``."""
        ...

    async def remove(self, workspace_id: UUID, worker_id: UUID) -> None:
        """Delete a worker of this workspace (nothing happens when there is none)."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        """A workspace's workers, newest first."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many workers a workspace has."""
        ...


class ApiKeyRepository(Protocol):
    """API keys, always looked up inside one workspace (or by their token's hash)."""

    async def add(self, key: ApiKey) -> None:
        """Store a new key."""
        ...

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        """A key of this workspace."""
        ...

    async def find(self, token_hash: str) -> ApiKey | None:
        """The key whose token has this hash."""
        ...

    async def touch(self, key_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Set ``last_used_at`` to ``at`` unless it is already at or after ``stale_before``."""
        ...

    async def remove(self, workspace_id: UUID, key_id: UUID) -> None:
        """Delete a key of this workspace (nothing happens when there is none)."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        """A workspace's keys, newest first."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many keys a workspace has."""
        ...


class RoleRepository(Protocol):
    """Custom roles of a workspace (built-in roles are constants of the domain)."""

    async def add(self, workspace_id: UUID, role: Role) -> None:
        """Store a custom role; ``NameTakenError`` if the workspace has that slug."""
        ...

    async def get(self, workspace_id: UUID, slug: str) -> Role | None:
        """A custom role by slug."""
        ...

    async def list(self, workspace_id: UUID) -> list[Role]:
        """Every custom role of a workspace, by slug."""
        ...

    async def update(self, workspace_id: UUID, role: Role) -> None:
        """Store a changed custom role (same slug)."""
        ...

    async def remove(self, workspace_id: UUID, slug: str) -> None:
        """Delete a custom role (nothing happens when there is none)."""
        ...


class InvitationRepository(Protocol):
    """Invitations, looked up inside their workspace, or by the invited email."""

    async def add(self, invitation: Invitation) -> None:
        """Store a new invitation."""
        ...

    async def get(self, workspace_id: UUID, invitation_id: UUID) -> Invitation | None:
        """An invitation of this workspace."""
        ...

    async def get_for_email(self, invitation_id: UUID, email: str) -> Invitation | None:
        """An invitation addressed to ``email`` (case-insensitively), locked until the unit
        of work ends (it is about to be used)."""
        ...

    async def update(self, invitation: Invitation) -> None:
        """Store a used invitation."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Invitation]:
        """A workspace's invitations, newest first."""
        ...

    async def count_pending(
        self, workspace_id: UUID, now: datetime, role: str | None = None
    ) -> int:
        """Invitations neither used nor expired at ``now`` (only of ``role``, if given)."""
        ...


@attrs.frozen
class AuditFilter:
    """Optional filters of the audit list."""

    action: str | None = None
    actor_id: UUID | None = None
    since: datetime | None = None


class AuditRepository(Protocol):
    """The audit trail."""

    async def add(self, event: AuditEvent) -> None:
        """Record an event."""
        ...

    async def list(
        self, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        """A workspace's events, newest first."""
        ...


@attrs.frozen
class IdempotencyRecord:
    """A reserved Idempotency-Key and, once the request succeeded, its result (in the
    core's own text form)."""

    scope: str
    key: str
    fingerprint: str
    created_at: datetime
    body: str | None = None


class IdempotencyRepository(Protocol):
    """Idempotency keys, stored in the same transaction as what they create."""

    async def reserve(self, record: IdempotencyRecord, expired_before: datetime) -> None:
        """Reserve a key; ``IdempotencyKeyTakenError`` if a record newer than
        ``expired_before`` holds it (an older one is replaced)."""
        ...

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        """A reserved key."""
        ...

    async def complete(self, scope: str, key: str, body: str) -> None:
        """Attach the request's result to a reserved key."""
        ...

    async def purge(self, expired_before: datetime) -> int:
        """Delete the keys reserved before ``expired_before``; how many went."""
        ...


class AccountRepository(Protocol):
    """Local accounts of the built-in identity provider."""

    async def add(self, account: Account) -> None:
        """Store an account; ``NameTakenError`` if the email is taken (case-insensitively)."""
        ...

    async def get(self, account_id: UUID) -> Account | None:
        """An account by id."""
        ...

    async def get_by_email(self, email: str) -> Account | None:
        """An account by email, case-insensitively."""
        ...

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        """Remember a failed approval for ``email`` from the client ``address``."""
        ...

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        """When the latest ``limit`` failed approvals from ``address`` (for ``email`` only,
        case-insensitively, when given) since ``since`` happened, newest first."""
        ...

    async def purge_failed_logins(self, before: datetime) -> int:
        """Forget the failed approvals that happened before ``before``; how many went."""
        ...


class DeviceGrantRepository(Protocol):
    """Device-code grants of the built-in identity provider."""

    async def add(self, grant: DeviceGrant) -> None:
        """Store a new grant."""
        ...

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """A grant by the hash of its device code; ``for_update`` locks it until the unit
        of work ends (the grant is about to change: two exchanges of one code must not both
        get a token)."""
        ...

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The newest grant with this user code; ``for_update`` locks it until the unit of
        work ends (failed approvals are counted exactly under concurrent attempts)."""
        ...

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The grant that issued this access token; ``for_update`` locks it until the unit
        of work ends (the token is about to be spent: two exchanges of one token must not
        both open a session)."""
        ...

    async def update(self, grant: DeviceGrant) -> None:
        """Store a changed grant."""
        ...


class IntegrityViolationError(Exception):
    """A write broke a constraint that no use case should ever break (a bug, not a refusal):
    a missing referenced row, or an update of a row that does not exist."""
