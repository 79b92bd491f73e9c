"""In-memory repositories. They refuse what the SQL schema refuses: duplicate names,
dangling references, updates of rows that do not exist.

``for_update`` changes nothing here: the store's transactions are serialised as a whole,
which already gives a locking read its guarantee.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.store import Transaction
from strongroom.adapters.wire import render
from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage, Verification
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.errors import NameTakenError
from strongroom.domain.invitations import Invitation, InvitationState
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.names import email_key, name_key
from strongroom.domain.pagination import K, Page, PageRequest, page_of, sort_key
from strongroom.domain.permissions import BUILTIN_ROLES, Permission, Role
from strongroom.domain.principals import Actor, PrincipalType, Session
from strongroom.domain.restores import Restore, RestoreState
from strongroom.domain.runs import Run, RunState
from strongroom.domain.users import User
from strongroom.domain.workspaces import (
    Admission,
    Member,
    Membership,
    MemberWorkspace,
    Workspace,
    admits,
)
from strongroom.ports.driven.repositories import (
    AuditFilter,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
    Rendered,
    SessionGrant,
)


def keyset_page(items: Iterable[K], page: PageRequest) -> Page[K]:
    """Newest-first keyset page of ``items``, as the SQL adapters' index scans give it."""
    ordered = sorted(items, key=sort_key, reverse=True)
    if page.after is not None:
        after = (page.after.created_at, page.after.id)
        ordered = [item for item in ordered if sort_key(item) < after]
    return page_of(ordered[: page.limit + 1], page)


def _purge(table: dict[Any, Any], gone: Callable[[Any], bool]) -> int:
    """Delete the rows of ``table`` that ``gone`` picks; how many."""
    doomed = [key for key, row in table.items() if gone(row)]
    for key in doomed:
        del table[key]
    return len(doomed)


def _require(present: bool, what: str) -> None:
    if not present:
        raise IntegrityViolationError(what)


class _Repository:
    table: str

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def _insert(self, key: object, value: object) -> None:
        """Add a row; a key already present is refused, as a primary key would be."""
        _require(key not in self._tx.read(self.table), f"a new {self.table} row")
        self._tx.write(self.table)[key] = value

    def _replace(self, key: object, value: object) -> None:
        _require(key in self._tx.read(self.table), f"update of a missing {self.table} row")
        self._tx.write(self.table)[key] = value


class MemoryWorkspaceRepository(_Repository):
    """Workspaces."""

    table = "workspaces"

    async def add(self, workspace: Workspace) -> None:
        _require(workspace.created_by in self._tx.read("users"), "workspace creator exists")
        self._insert(workspace.id, workspace)

    async def get(self, workspace_id: UUID, *, for_update: bool = False) -> Workspace | None:
        found: Workspace | None = self._tx.read(self.table).get(workspace_id)
        return found

    async def update(self, workspace: Workspace) -> None:
        stored = await self.get(workspace.id)
        _require(stored is not None, "update of a missing workspace")
        assert stored is not None
        # The creation time is fixed, as the SQL update leaves it out.
        self._replace(workspace.id, evolve(workspace, created_at=stored.created_at))

    async def remove(self, workspace_id: UUID) -> None:
        self._tx.write(self.table).pop(workspace_id, None)
        for table, belongs in _WORKSPACE_CASCADE.items():
            rows = self._tx.write(table)
            for key in [key for key, row in rows.items() if belongs(key, row, workspace_id)]:
                del rows[key]

    async def count_created_by(self, user_id: UUID) -> int:
        return sum(1 for w in self._tx.read(self.table).values() if w.created_by == user_id)


def _in_workspace(_key: object, row: object, workspace_id: UUID) -> bool:
    return getattr(row, "workspace_id", None) == workspace_id


def _keyed_by_workspace(key: object, _row: object, workspace_id: UUID) -> bool:
    return isinstance(key, tuple) and key[0] == workspace_id


# What deleting a workspace takes with it (the SQL schema's ON DELETE CASCADE).
_WORKSPACE_CASCADE: dict[str, Callable[[object, object, UUID], bool]] = {
    "memberships": _keyed_by_workspace,
    "backups": _in_workspace,
    "runs": _in_workspace,
    "artifacts": _in_workspace,
    "restores": _in_workspace,
    "audit": _in_workspace,
    "sessions": _in_workspace,
    "workers": _in_workspace,
    "api_keys": _in_workspace,
    "invitations": _in_workspace,
    "roles": _keyed_by_workspace,
}


class MemoryMembershipRepository(_Repository):
    """Memberships, keyed by (workspace, user)."""

    table = "memberships"

    async def add(self, membership: Membership) -> None:
        _require(membership.workspace_id in self._tx.read("workspaces"), "workspace exists")
        _require(membership.user_id in self._tx.read("users"), "user exists")
        key = (membership.workspace_id, membership.user_id)
        _require(key not in self._tx.read(self.table), "one membership per person")
        self._tx.write(self.table)[key] = membership

    async def get(self, workspace_id: UUID, user_id: UUID) -> Membership | None:
        found: Membership | None = self._tx.read(self.table).get((workspace_id, user_id))
        return found

    async def list_for_user(self, user_id: UUID, page: PageRequest) -> Page[MemberWorkspace]:
        workspaces = self._tx.read("workspaces")
        mine = [
            MemberWorkspace(workspaces[m.workspace_id], m.role)
            for m in self._tx.read(self.table).values()
            if m.user_id == user_id
        ]
        return keyset_page(mine, page)

    async def count(self, workspace_id: UUID) -> int:
        return sum(1 for key in self._tx.read(self.table) if key[0] == workspace_id)

    async def list_members(self, workspace_id: UUID, page: PageRequest) -> Page[Member]:
        users = self._tx.read("users")
        members = (
            Member(m.user_id, users[m.user_id].email, users[m.user_id].name, m.role, m.joined_at)
            for m in self._tx.read(self.table).values()
            if m.workspace_id == workspace_id
        )
        return keyset_page(members, page)

    async def update(self, membership: Membership) -> None:
        key = (membership.workspace_id, membership.user_id)
        stored: Membership | None = self._tx.read(self.table).get(key)
        if stored is None:
            raise IntegrityViolationError("update of a missing membership")
        self._tx.write(self.table)[key] = evolve(stored, role=membership.role)

    async def remove(self, workspace_id: UUID, user_id: UUID) -> None:
        if (workspace_id, user_id) in self._tx.read(self.table):
            del self._tx.write(self.table)[(workspace_id, user_id)]

    async def count_with_role(self, workspace_id: UUID, role: str) -> int:
        return sum(
            1
            for m in self._tx.read(self.table).values()
            if m.workspace_id == workspace_id and m.role == role
        )


class MemoryUserRepository(_Repository):
    """People."""

    table = "users"

    async def add(self, user: User) -> None:
        taken = any(u.idp_subject == user.idp_subject for u in self._tx.read(self.table).values())
        _require(not taken, "one user per identity subject")
        self._insert(user.id, user)

    async def get(self, user_id: UUID, *, for_update: bool = False) -> User | None:
        found: User | None = self._tx.read(self.table).get(user_id)
        return found

    async def get_by_subject(self, subject: str) -> User | None:
        return next(
            (u for u in self._tx.read(self.table).values() if u.idp_subject == subject), None
        )


class MemorySessionRepository(_Repository):
    """Sessions."""

    table = "sessions"

    async def add(self, session: Session) -> None:
        _require(session.user_id in self._tx.read("users"), "session user exists")
        if session.workspace_id is not None:
            _require(session.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(session.id, session)

    async def find(self, token_hash: str) -> SessionGrant | None:
        session = next(
            (s for s in self._tx.read(self.table).values() if s.token_hash == token_hash), None
        )
        if session is None:
            return None
        user = self._tx.read("users")[session.user_id]
        role = None
        if session.workspace_id is not None:
            membership = self._tx.read("memberships").get((session.workspace_id, user.id))
            if membership is not None:
                role = _role(self._tx, session.workspace_id, membership.role)
        return SessionGrant(session, user, role)

    async def find_with_backup(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Backup | None] | None:
        grant = await self.find(token_hash)
        if grant is None:
            return None
        scope = grant.session.workspace_id
        backup = None if scope is None else self._tx.read("backups").get(backup_id)
        return grant, backup if backup is not None and backup.workspace_id == scope else None

    async def find_with_backups(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Page[Backup]] | None:
        grant = await self.find(token_hash)
        if grant is None:
            return None
        if grant.session.workspace_id != workspace_id:
            return grant, keyset_page((), page)
        return grant, await MemoryBackupRepository(self._tx).list(workspace_id, page)

    async def find_with_backup_json(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Rendered | None] | None:
        found = await self.find_with_backup(token_hash, backup_id)
        if found is None:
            return None
        grant, backup = found
        return grant, None if backup is None else Rendered(render(backup))

    async def find_with_backups_json(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Rendered] | None:
        found = await self.find_with_backups(token_hash, workspace_id, page)
        return None if found is None else (found[0], Rendered(render(found[1])))

    async def find_adding_backup(
        self, token_hash: str, backup: Backup, event: AuditEvent, admission: Admission
    ) -> tuple[SessionGrant, bool] | None:
        grant = await self.find(token_hash)
        if grant is None:
            return None
        if grant.session.workspace_id != backup.workspace_id:
            return grant, False
        by_person = evolve(event, actor=Actor(PrincipalType.USER, grant.session.user_id))
        added = await MemoryBackupRepository(self._tx).add_admitted(backup, by_person, admission)
        return grant, added

    async def create_backup(
        self,
        token_hash: str,
        backup: Backup,
        event: AuditEvent,
        admission: Admission,
        permissions: Sequence[Permission],
        now: datetime,
    ) -> bool:
        grant = await self.find(token_hash)
        if (
            grant is None
            or not grant.session.is_live(now)
            or grant.session.workspace_id != backup.workspace_id
            or grant.role is None
            or not any(permission in grant.role.permissions for permission in permissions)
        ):
            return False
        by_person = evolve(event, actor=Actor(PrincipalType.USER, grant.session.user_id))
        return await MemoryBackupRepository(self._tx).add_admitted(backup, by_person, admission)

    async def revoke(self, session_id: UUID, at: datetime) -> None:
        session = self._tx.read(self.table).get(session_id)
        if session is not None and session.revoked_at is None:
            self._tx.write(self.table)[session_id] = evolve(session, revoked_at=at)


def _role(tx: Transaction, workspace_id: UUID, slug: str) -> Role | None:
    builtin = BUILTIN_ROLES.get(slug)
    if builtin is not None:
        return builtin
    custom: Role | None = tx.read("roles").get((workspace_id, slug))
    return custom


class MemoryBackupRepository(_Repository):
    """Backups; names are unique per workspace, case-insensitively."""

    table = "backups"

    def _ensure_name_free(self, backup: Backup) -> None:
        for other in self._tx.read(self.table).values():
            if (
                other.workspace_id == backup.workspace_id
                and other.id != backup.id
                and name_key(other.name) == name_key(backup.name)
            ):
                raise NameTakenError(f"a backup named {backup.name!r} already exists")

    async def add(self, backup: Backup) -> None:
        _require(backup.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._ensure_name_free(backup)
        self._insert(backup.id, backup)

    async def add_admitted(self, backup: Backup, event: AuditEvent, admission: Admission) -> bool:
        workspace: Workspace | None = self._tx.read("workspaces").get(backup.workspace_id)
        admitted = workspace is not None and admits(
            workspace, admission, await self.count(backup.workspace_id)
        )
        if admitted:
            await self.add(backup)
            await MemoryAuditRepository(self._tx).add(event)
        return admitted

    async def get(
        self, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
    ) -> Backup | None:
        backup: Backup | None = self._tx.read(self.table).get(backup_id)
        return backup if backup is not None and backup.workspace_id == workspace_id else None

    async def update(self, backup: Backup) -> None:
        stored = await self.get(backup.workspace_id, backup.id)
        _require(stored is not None, "update of a missing backup")
        self._ensure_name_free(backup)
        self._tx.write(self.table)[backup.id] = backup

    async def remove(self, workspace_id: UUID, backup_id: UUID) -> None:
        if await self.get(workspace_id, backup_id) is not None:
            del self._tx.write(self.table)[backup_id]
            # The backup's runs go with it (ON DELETE CASCADE).
            for table in ("runs", "artifacts"):
                rows = self._tx.write(table)
                for key in [key for key, row in rows.items() if row.backup_id == backup_id]:
                    del rows[key]
            # And the artifacts' restores (ON DELETE CASCADE).
            artifacts = self._tx.read("artifacts")
            restores = self._tx.write("restores")
            for key in [key for key, row in restores.items() if row.artifact_id not in artifacts]:
                del restores[key]

    async def list(
        self, workspace_id: UUID, page: PageRequest, worker_id: UUID | None = None
    ) -> Page[Backup]:
        rows = self._tx.read(self.table).values()
        mine = (b for b in rows if b.workspace_id == workspace_id)
        return keyset_page((b for b in mine if worker_id in (None, b.worker_id)), page)

    async def count(self, workspace_id: UUID) -> int:
        return sum(1 for b in self._tx.read(self.table).values() if b.workspace_id == workspace_id)

    async def due(self, now: datetime, limit: int) -> Sequence[Backup]:
        found = [
            b
            for b in self._tx.read(self.table).values()
            if b.next_run_at is not None and b.next_run_at <= now and b.is_scheduled
        ]
        found.sort(key=lambda b: (b.next_run_at, b.id))
        return found[:limit]

    async def advance_schedule(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_run_at: datetime
    ) -> bool:
        stored = await self.get(workspace_id, backup_id)
        if stored is None or stored.next_run_at != expected:
            return False
        self._tx.write(self.table)[backup_id] = evolve(stored, next_run_at=next_run_at)
        return True


class MemoryRunRepository(_Repository):
    """Runs; each needs its backup in the same workspace."""

    table = "runs"

    async def add(self, run: Run) -> None:
        backup = self._tx.read("backups").get(run.backup_id)
        _require(
            backup is not None and backup.workspace_id == run.workspace_id,
            "run's backup exists in its workspace",
        )
        self._insert(run.id, run)

    async def get(
        self, workspace_id: UUID, run_id: UUID, *, for_update: bool = False
    ) -> Run | None:
        run: Run | None = self._tx.read(self.table).get(run_id)
        return run if run is not None and run.workspace_id == workspace_id else None

    async def update(self, run: Run) -> None:
        stored = await self.get(run.workspace_id, run.id)
        _require(
            stored is not None and stored.backup_id == run.backup_id, "update of a missing run"
        )
        assert stored is not None
        # Identity and origin are fixed, as the SQL update leaves them out.
        self._replace(run.id, evolve(run, trigger=stored.trigger, created_at=stored.created_at))

    async def lease_expired(self, now: datetime, limit: int) -> list[Run]:
        found = [
            run
            for run in self._tx.read(self.table).values()
            if run.state is RunState.RUNNING and run.lease_expired(now)
        ]
        found.sort(key=lambda run: (run.lease_expires_at, run.id))
        return found[:limit]

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        return any(
            run.workspace_id == workspace_id
            and run.backup_id == backup_id
            and run.state in (RunState.QUEUED, RunState.RUNNING)
            for run in self._tx.read(self.table).values()
        )

    async def announce_queued(self, workspace_id: UUID) -> None:
        """Nothing: one process holds the store; its ``RunSignals`` wake its claims."""

    async def next_queued(self, workspace_id: UUID, worker_id: UUID) -> Run | None:
        backups: Mapping[UUID, Backup] = self._tx.read(MemoryBackupRepository.table)
        queued = [
            run
            for run in self._tx.read(self.table).values()
            if run.workspace_id == workspace_id
            and run.state is RunState.QUEUED
            and (owner := backups.get(run.backup_id)) is not None
            and owner.worker_id == worker_id
        ]
        return min(queued, key=lambda run: (run.created_at, run.id), default=None)

    async def next_queued_cloud(self) -> Run | None:
        backups: Mapping[UUID, Backup] = self._tx.read(MemoryBackupRepository.table)
        queued = [
            run
            for run in self._tx.read(self.table).values()
            if run.state is RunState.QUEUED
            and (owner := backups.get(run.backup_id)) is not None
            and owner.kind is BackupKind.CLOUD
        ]
        return min(queued, key=lambda run: (run.created_at, run.id), default=None)

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, state: RunState | None, page: PageRequest
    ) -> Page[Run]:
        return keyset_page(
            (
                run
                for run in self._tx.read(self.table).values()
                if run.workspace_id == workspace_id
                and run.backup_id == backup_id
                and (state is None or run.state is state)
            ),
            page,
        )


class MemoryRestoreRepository(_Repository):
    """Restores; each needs its artifact in the same workspace."""

    table = "restores"

    async def add(self, restore: Restore) -> None:
        artifact = self._tx.read("artifacts").get(restore.artifact_id)
        _require(
            artifact is not None and artifact.workspace_id == restore.workspace_id,
            "restore's artifact exists in its workspace",
        )
        self._insert(restore.id, restore)

    async def get(
        self, workspace_id: UUID, restore_id: UUID, *, for_update: bool = False
    ) -> Restore | None:
        found: Restore | None = self._tx.read(self.table).get(restore_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def update(self, restore: Restore) -> None:
        stored = await self.get(restore.workspace_id, restore.id)
        _require(
            stored is not None and stored.artifact_id == restore.artifact_id,
            "update of a missing restore",
        )
        assert stored is not None
        # Identity, target and creation time are fixed, as the SQL update leaves them out.
        self._replace(
            restore.id, evolve(restore, target=stored.target, created_at=stored.created_at)
        )

    async def next_queued(self) -> Restore | None:
        queued = [r for r in self._tx.read(self.table).values() if r.state is RestoreState.QUEUED]
        return min(queued, key=lambda r: (r.created_at, r.id), default=None)

    async def lease_expired(self, now: datetime, limit: int) -> list[Restore]:
        found = [r for r in self._tx.read(self.table).values() if r.lease_expired(now)]
        found.sort(key=lambda r: (r.lease_expires_at, r.id))
        return found[:limit]


class MemoryArtifactRepository(_Repository):
    """Artifacts; each needs a run of its backup in its workspace, names unique per run."""

    table = "artifacts"

    def _rows(self, workspace_id: UUID) -> list[Artifact]:
        return [a for a in self._tx.read(self.table).values() if a.workspace_id == workspace_id]

    async def add(self, artifact: Artifact) -> None:
        run = self._tx.read("runs").get(artifact.run_id)
        _require(
            run is not None
            and run.workspace_id == artifact.workspace_id
            and run.backup_id == artifact.backup_id,
            "artifact's run exists in its backup and workspace",
        )
        _require(
            all(
                other.run_id != artifact.run_id or other.name != artifact.name
                for other in self._tx.read(self.table).values()
            ),
            "artifact name unused in its run",
        )
        self._insert(artifact.id, artifact)

    async def get(
        self, workspace_id: UUID, artifact_id: UUID, *, for_update: bool = False
    ) -> Artifact | None:
        found: Artifact | None = self._tx.read(self.table).get(artifact_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def update(self, artifact: Artifact) -> None:
        stored = await self.get(artifact.workspace_id, artifact.id)
        _require(
            stored is not None and stored.run_id == artifact.run_id, "update of a missing artifact"
        )
        assert stored is not None
        # Only state, upload, expiry, lock and verification change, as the SQL update says,
        # and the size and sha256 of a pending artifact (one the service streamed itself).
        written = stored.state is ArtifactState.PENDING
        self._replace(
            artifact.id,
            evolve(
                stored,
                size=artifact.size if written else stored.size,
                sha256=artifact.sha256 if written else stored.sha256,
                state=artifact.state,
                upload_id=artifact.upload_id,
                expires_at=artifact.expires_at,
                locked_until=artifact.locked_until,
                verification=artifact.verification,
                verified_at=artifact.verified_at,
            ),
        )

    async def find_in_run(self, workspace_id: UUID, run_id: UUID, name: str) -> Artifact | None:
        for artifact in self._rows(workspace_id):
            if artifact.run_id == run_id and artifact.name == name:
                return artifact
        return None

    async def list_for_run(self, workspace_id: UUID, run_id: UUID) -> list[Artifact]:
        found = [a for a in self._rows(workspace_id) if a.run_id == run_id]
        return sorted(found, key=sort_key)

    async def count_available(self, workspace_id: UUID, backup_id: UUID) -> int:
        return sum(
            1
            for a in self._rows(workspace_id)
            if a.backup_id == backup_id and a.state is ArtifactState.AVAILABLE
        )

    async def any_locked(
        self,
        workspace_id: UUID,
        now: datetime,
        *,
        backup_id: UUID | None = None,
        storage: ArtifactStorage | None = None,
    ) -> bool:
        return any(
            a.is_locked(now)
            and (backup_id is None or a.backup_id == backup_id)
            and (storage is None or a.storage is storage)
            for a in self._rows(workspace_id)
        )

    async def storage_bytes(self, workspace_id: UUID, *, with_pending: bool = False) -> int:
        states = (
            {ArtifactState.AVAILABLE, ArtifactState.PENDING}
            if with_pending
            else {ArtifactState.AVAILABLE}
        )
        return sum(
            a.size
            for a in self._rows(workspace_id)
            if a.storage is ArtifactStorage.SERVICE and a.state in states
        )

    async def expired(self, now: datetime, limit: int) -> list[Artifact]:
        found = [a for a in self._tx.read(self.table).values() if a.is_expired(now)]
        found.sort(key=lambda a: (a.expires_at, a.id))
        return found[:limit]

    async def to_verify(
        self, limit: int, verified_before: datetime | None = None
    ) -> list[Artifact]:
        def due(a: Artifact) -> bool:
            if a.verification is Verification.PENDING:
                return True
            return verified_before is not None and (
                a.verified_at is None or a.verified_at < verified_before
            )

        found = [
            a
            for a in self._tx.read(self.table).values()
            if a.state is ArtifactState.AVAILABLE and due(a)
        ]
        found.sort(
            key=lambda a: (
                a.verification is not Verification.PENDING,
                a.verified_at or a.created_at,
                str(a.id),
            )
        )
        return found[:limit]

    async def list(self, workspace_id: UUID, deleted: bool, page: PageRequest) -> Page[Artifact]:
        return keyset_page(
            (a for a in self._rows(workspace_id) if (a.state is ArtifactState.DELETED) == deleted),
            page,
        )


class _Credentials(_Repository):
    """Machine credentials: unique ids and token hashes, scoped to their workspace."""

    usage_field: str

    def _add(self, record: ApiKey | Worker) -> None:
        _require(record.workspace_id in self._tx.read("workspaces"), "workspace exists")
        taken = any(r.token_hash == record.token_hash for r in self._tx.read(self.table).values())
        _require(not taken, f"a unique {self.table} token hash")
        self._insert(record.id, record)

    def _get(self, workspace_id: UUID, record_id: UUID) -> ApiKey | Worker | None:
        found: ApiKey | Worker | None = self._tx.read(self.table).get(record_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    def _find(self, token_hash: str) -> ApiKey | Worker | None:
        return next(
            (r for r in self._tx.read(self.table).values() if r.token_hash == token_hash), None
        )

    async def touch(self, record_id: UUID, at: datetime, stale_before: datetime) -> None:
        found = self._tx.read(self.table).get(record_id)
        if found is None:
            return
        last = getattr(found, self.usage_field)
        if last is None or last < stale_before:
            self._tx.write(self.table)[record_id] = evolve(found, **{self.usage_field: at})

    async def remove(self, workspace_id: UUID, record_id: UUID) -> None:
        if self._get(workspace_id, record_id) is not None:
            del self._tx.write(self.table)[record_id]

    async def count(self, workspace_id: UUID) -> int:
        return sum(1 for r in self._tx.read(self.table).values() if r.workspace_id == workspace_id)


class MemoryWorkerRepository(_Credentials):
    """Workers."""

    table = "workers"
    usage_field = "last_seen_at"

    async def add(self, worker: Worker) -> None:
        self._add(worker)

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        return self._get(workspace_id, worker_id) is not None

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        found = self._get(workspace_id, worker_id)
        return found if isinstance(found, Worker) else None

    async def find(self, token_hash: str) -> Worker | None:
        found = self._find(token_hash)
        return found if isinstance(found, Worker) else None

    async def update(self, worker: Worker) -> None:
        stored = await self.get(worker.workspace_id, worker.id)
        _require(stored is not None, "update of a missing worker")
        others = (r for r in self._tx.read(self.table).values() if r.id != worker.id)
        _require(all(r.token_hash != worker.token_hash for r in others), "unique token hash")
        assert stored is not None
        self._tx.write(self.table)[worker.id] = evolve(worker, created_at=stored.created_at)

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        rows = self._tx.read(self.table).values()
        return keyset_page((w for w in rows if w.workspace_id == workspace_id), page)


class MemoryApiKeyRepository(_Credentials):
    """API keys."""

    table = "api_keys"
    usage_field = "last_used_at"

    async def add(self, key: ApiKey) -> None:
        self._add(key)

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        found = self._get(workspace_id, key_id)
        return found if isinstance(found, ApiKey) else None

    async def find(self, token_hash: str) -> ApiKey | None:
        found = self._find(token_hash)
        return found if isinstance(found, ApiKey) else None

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        rows = self._tx.read(self.table).values()
        return keyset_page((k for k in rows if k.workspace_id == workspace_id), page)


class MemoryInvitationRepository(_Repository):
    """Invitations."""

    table = "invitations"

    async def add(self, invitation: Invitation) -> None:
        _require(invitation.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(invitation.id, invitation)

    async def get(self, workspace_id: UUID, invitation_id: UUID) -> Invitation | None:
        found: Invitation | None = self._tx.read(self.table).get(invitation_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    async def get_for_email(self, invitation_id: UUID, email: str) -> Invitation | None:
        found: Invitation | None = self._tx.read(self.table).get(invitation_id)
        if found is None or email_key(found.email) != email_key(email):
            return None
        return found

    async def update(self, invitation: Invitation) -> None:
        stored = await self.get(invitation.workspace_id, invitation.id)
        _require(stored is not None, "update of a missing invitation")
        self._tx.write(self.table)[invitation.id] = invitation

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Invitation]:
        rows = self._tx.read(self.table).values()
        return keyset_page((i for i in rows if i.workspace_id == workspace_id), page)

    async def count_pending(
        self, workspace_id: UUID, now: datetime, role: str | None = None
    ) -> int:
        return sum(
            1
            for i in self._tx.read(self.table).values()
            if i.workspace_id == workspace_id
            and i.state(now) is InvitationState.PENDING
            and role in (None, i.role)
        )


class MemoryRoleRepository(_Repository):
    """Custom roles, keyed by (workspace, slug)."""

    table = "roles"

    async def add(self, workspace_id: UUID, role: Role) -> None:
        _require(workspace_id in self._tx.read("workspaces"), "workspace exists")
        if (workspace_id, role.slug) in self._tx.read(self.table):
            raise NameTakenError(f"a role with slug {role.slug!r} already exists")
        self._tx.write(self.table)[(workspace_id, role.slug)] = role

    async def get(self, workspace_id: UUID, slug: str) -> Role | None:
        found: Role | None = self._tx.read(self.table).get((workspace_id, slug))
        return found

    async def list(self, workspace_id: UUID) -> list[Role]:
        rows = self._tx.read(self.table).items()
        return [role for (wid, slug), role in sorted(rows) if wid == workspace_id]

    async def update(self, workspace_id: UUID, role: Role) -> None:
        self._replace((workspace_id, role.slug), role)

    async def remove(self, workspace_id: UUID, slug: str) -> None:
        self._tx.write(self.table).pop((workspace_id, slug), None)


class MemoryAuditRepository(_Repository):
    """The audit trail."""

    table = "audit"

    async def add(self, event: AuditEvent) -> None:
        _require(event.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(event.id, event)

    async def list(
        self, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        def matches(event: AuditEvent) -> bool:
            return (
                event.workspace_id == workspace_id
                and (filters.action is None or event.action == filters.action)
                and (filters.actor_id is None or event.actor.id == filters.actor_id)
                and (filters.since is None or event.occurred_at >= filters.since)
            )

        return keyset_page(filter(matches, self._tx.read(self.table).values()), page)


class MemoryIdempotencyRepository(_Repository):
    """Idempotency keys, unique per (scope, key)."""

    table = "idempotency"

    async def reserve(self, record: IdempotencyRecord, expired_before: datetime) -> None:
        key = (record.scope, record.key)
        held: IdempotencyRecord | None = self._tx.read(self.table).get(key)
        if held is not None and held.created_at >= expired_before:
            raise IdempotencyKeyTakenError(record.key)
        self._tx.write(self.table)[key] = record

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        found: IdempotencyRecord | None = self._tx.read(self.table).get((scope, key))
        return found

    async def complete(self, scope: str, key: str, body: str) -> None:
        held = await self.get(scope, key)
        if held is None:
            raise IntegrityViolationError("complete of an unreserved key")
        self._tx.write(self.table)[(scope, key)] = evolve(held, body=body)

    async def purge(self, expired_before: datetime) -> int:
        return _purge(self._tx.write(self.table), lambda r: r.created_at < expired_before)


class MemoryAccountRepository(_Repository):
    """Local accounts; emails are unique case-insensitively."""

    table = "accounts"

    async def add(self, account: Account) -> None:
        if await self.get_by_email(account.email) is not None:
            raise NameTakenError("an account with this email already exists")
        self._insert(account.id, account)

    async def get(self, account_id: UUID) -> Account | None:
        found: Account | None = self._tx.read(self.table).get(account_id)
        return found

    async def get_by_email(self, email: str) -> Account | None:
        wanted = email_key(email)
        return next(
            (a for a in self._tx.read(self.table).values() if email_key(a.email) == wanted), None
        )

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        failures = self._tx.write("failed_logins")
        failures[(email_key(email), address, at, len(failures))] = at

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        wanted = None if email is None else email_key(email)
        times = [
            at
            for (who, where, at, _n) in self._tx.read("failed_logins")
            if where == address and at >= since and (wanted is None or who == wanted)
        ]
        return sorted(times, reverse=True)[:limit]

    async def purge_failed_logins(self, before: datetime) -> int:
        return _purge(self._tx.write("failed_logins"), lambda at: at < before)


class MemoryDeviceGrantRepository(_Repository):
    """Device-code grants."""

    table = "device_grants"

    def _find(self, match: Callable[[DeviceGrant], bool]) -> DeviceGrant | None:
        found = [g for g in self._tx.read(self.table).values() if match(g)]
        # Newest first by (created_at, id), as the SQL adapters order them.
        return max(found, key=lambda g: (g.created_at, g.id)) if found else None

    async def add(self, grant: DeviceGrant) -> None:
        self._insert(grant.id, grant)

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.device_code_hash == device_code_hash)

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.user_code == user_code)

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.access_token_hash == access_token_hash)

    async def update(self, grant: DeviceGrant) -> None:
        self._replace(grant.id, grant)
