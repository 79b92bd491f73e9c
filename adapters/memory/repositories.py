"""In-memory repositories. They refuse what the SQL schema refuses: duplicate names,
dangling references, updates of rows that do not exist.

``for_update`` changes nothing here: the store's transactions are serialised as a whole,
which already gives a locking read its guarantee.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.backup_repositories import MemoryBackupRepository
from strongroom.adapters.memory.store import Transaction
from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, require
from strongroom.adapters.wire import render
from strongroom.domain.backups import Backup
from strongroom.domain.errors import NameTakenError
from strongroom.domain.invitations import Invitation, InvitationState
from strongroom.domain.names import email_key
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import BUILTIN_ROLES, Role
from strongroom.domain.principals import Session
from strongroom.domain.users import User
from strongroom.domain.workspaces import (
    Member,
    Membership,
    MemberWorkspace,
    Workspace,
)
from strongroom.ports.driven.repositories import (
    CountedWorkspace,
    IntegrityViolationError,
    Rendered,
    SessionGrant,
)


class MemoryWorkspaceRepository(MemoryRepository):
    """Workspaces."""

    table = "workspaces"

    async def add(self, workspace: Workspace) -> None:
        require(workspace.created_by in self._tx.read("users"), "workspace creator exists")
        self._insert(workspace.id, workspace)

    async def get(self, workspace_id: UUID, *, for_update: bool = False) -> Workspace | None:
        found: Workspace | None = self._tx.read(self.table).get(workspace_id)
        return found

    async def update(self, workspace: Workspace) -> None:
        stored = await self.get(workspace.id)
        require(stored is not None, "update of a missing workspace")
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

    async def get_counted(self, workspace_id: UUID) -> CountedWorkspace | None:
        workspace = await self.get(workspace_id)
        if workspace is None:
            return None
        return CountedWorkspace(
            workspace, await MemoryBackupRepository(self._tx).count(workspace_id)
        )


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
    "drills": _in_workspace,
    "artifact_manifests": _keyed_by_workspace,
    "audit": _in_workspace,
    "sessions": _in_workspace,
    "workers": _in_workspace,
    "api_keys": _in_workspace,
    "invitations": _in_workspace,
    "roles": _keyed_by_workspace,
}


class MemoryMembershipRepository(MemoryRepository):
    """Memberships, keyed by (workspace, user)."""

    table = "memberships"

    async def add(self, membership: Membership) -> None:
        require(membership.workspace_id in self._tx.read("workspaces"), "workspace exists")
        require(membership.user_id in self._tx.read("users"), "user exists")
        key = (membership.workspace_id, membership.user_id)
        require(key not in self._tx.read(self.table), "one membership per person")
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


class MemoryUserRepository(MemoryRepository):
    """People."""

    table = "users"

    async def add(self, user: User) -> None:
        taken = any(u.idp_subject == user.idp_subject for u in self._tx.read(self.table).values())
        require(not taken, "one user per identity subject")
        self._insert(user.id, user)

    async def get(self, user_id: UUID, *, for_update: bool = False) -> User | None:
        found: User | None = self._tx.read(self.table).get(user_id)
        return found

    async def get_by_subject(self, subject: str) -> User | None:
        return next(
            (u for u in self._tx.read(self.table).values() if u.idp_subject == subject), None
        )


class MemorySessionRepository(MemoryRepository):
    """Sessions."""

    table = "sessions"

    async def add(self, session: Session, origin: str | None = None) -> None:
        require(session.user_id in self._tx.read("users"), "session user exists")
        if session.workspace_id is not None:
            require(session.workspace_id in self._tx.read("workspaces"), "workspace exists")
        self._insert(session.id, session)
        if origin is not None:
            self._tx.write("session_origins")[session.id] = origin

    async def origin_of(self, session_id: UUID) -> str | None:
        live = session_id in self._tx.read(self.table)
        origin: str | None = self._tx.read("session_origins").get(session_id)
        return origin if live else None

    async def revoke_from(self, origin: str, at: datetime) -> int:
        made = [key for key, value in self._tx.read("session_origins").items() if value == origin]
        sessions = self._tx.read(self.table)
        live = [key for key in made if key in sessions and sessions[key].revoked_at is None]
        for key in live:
            await self.revoke(key, at)
        return len(live)

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

    async def find_with_workspace(
        self, token_hash: str, workspace_id: UUID
    ) -> tuple[SessionGrant, CountedWorkspace | None] | None:
        grant = await self.find(token_hash)
        if grant is None:
            return None
        if grant.session.workspace_id != workspace_id:
            return grant, None
        return grant, await MemoryWorkspaceRepository(self._tx).get_counted(workspace_id)

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


class MemoryInvitationRepository(MemoryRepository):
    """Invitations."""

    table = "invitations"

    async def add(self, invitation: Invitation) -> None:
        require(invitation.workspace_id in self._tx.read("workspaces"), "workspace exists")
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
        require(stored is not None, "update of a missing invitation")
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


class MemoryRoleRepository(MemoryRepository):
    """Custom roles, keyed by (workspace, slug)."""

    table = "roles"

    async def add(self, workspace_id: UUID, role: Role) -> None:
        require(workspace_id in self._tx.read("workspaces"), "workspace exists")
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
