"""Repository ports. Every look-up of a workspace's object takes the workspace id, so that
tenant scoping happens inside the query itself and never after it.

Adapters raise ``NameTakenError`` for unique-name violations, ``IdempotencyKeyTakenError``
when an Idempotency-Key is already reserved, and ``UpstreamUnavailableError`` when their
store fails.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup
from strongroom.domain.invitations import Invitation
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Role
from strongroom.domain.principals import Session
from strongroom.domain.users import User
from strongroom.domain.workspaces import (
    Member,
    Membership,
    MemberWorkspace,
    Workspace,
)


class IdempotencyKeyTakenError(Exception):
    """Another request already reserved this Idempotency-Key (port-level, never shown)."""


@attrs.frozen
class CountedWorkspace:
    """A workspace and how many backups it holds, read in one look-up: what the admission
    of a backup decides on."""

    workspace: Workspace
    backups: int


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

    async def get_counted(self, workspace_id: UUID) -> CountedWorkspace | None:
        """A workspace and its backup count (its usage counter), read together."""
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

    async def add(self, session: Session, origin: str | None = None) -> None:
        """Store a new session, made from the identity provider's grant ``origin`` (kept
        only to revoke by it)."""
        ...

    async def origin_of(self, session_id: UUID) -> str | None:
        """The grant a session was made from (``add``), if any."""
        ...

    async def revoke_from(self, origin: str, at: datetime) -> int:
        """End every live session made from the grant ``origin``; how many."""
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
        of a ``Backup``: what ``GET /v1/backups/{id}`` answers, as written with the row."""
        ...

    async def find_with_backups_json(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Rendered] | None:
        """``find_with_backups`` with the page as the API's JSON (``{"data": [...],
        "next_cursor": ...}``) instead of a ``Page``, from the bodies the store wrote."""
        ...

    async def find_with_workspace(
        self, token_hash: str, workspace_id: UUID
    ) -> tuple[SessionGrant, CountedWorkspace | None] | None:
        """``find``, and ``workspace_id`` with its backup count (as
        ``WorkspaceRepository.get_counted``) when it is the session's workspace, in one
        look-up: what a session's create decides on."""
        ...

    async def revoke(self, session_id: UUID, at: datetime) -> None:
        """End a session."""
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


class IntegrityViolationError(Exception):
    """A write broke a constraint that no use case should ever break (a bug, not a refusal):
    a missing referenced row, or an update of a row that does not exist."""
