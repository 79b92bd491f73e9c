"""SQL repositories of tenancy: workspaces, memberships, people, their sessions (with the
joined reads that check a session in the statement that reads), roles and invitations.

Each repository runs named queries (``queries/*.sql``) through ``Statements`` (see
``statements``), the one transaction of its unit of work, and maps rows with ``rows``.
Backups and what they make are in ``backup_repositories``, credentials in
``credential_repositories``, the audit trail and idempotency keys in
``record_repositories``.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.joined import joined_grant, joined_session
from strongroom.adapters.sql.rows import Params
from strongroom.adapters.sql.statements import SqlRepository, count_of, page_params, require
from strongroom.domain.backups import Backup
from strongroom.domain.invitations import Invitation
from strongroom.domain.names import email_key
from strongroom.domain.pagination import Page, PageRequest, page_of
from strongroom.domain.permissions import Role
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
    Rendered,
    SessionGrant,
)


class SqlWorkspaceRepository(SqlRepository):
    """Workspaces; removing one cascades to everything in it."""

    async def add(self, workspace: Workspace) -> None:
        """Store a new workspace."""
        await self._db.execute(Q.WORKSPACE_INSERT, rows.workspace_params(workspace, self._codec))

    async def get(self, workspace_id: UUID, *, for_update: bool = False) -> Workspace | None:
        """A workspace by id (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.WORKSPACE_GET, {"id": self._codec.uuid(workspace_id)}, writes=for_update
        )
        return None if row is None else rows.workspace_from_row(row, self._codec)

    async def update(self, workspace: Workspace) -> None:
        """Store a changed workspace (its creation time never changes)."""
        changed = await self._db.execute(
            Q.WORKSPACE_UPDATE, rows.workspace_params(workspace, self._codec)
        )
        require(changed == 1, "update of a missing workspaces row")

    async def remove(self, workspace_id: UUID) -> None:
        """Delete a workspace with its members, sessions, backups, audit, workers, roles."""
        await self._db.execute(Q.WORKSPACE_DELETE, {"id": self._codec.uuid(workspace_id)})

    async def get_counted(self, workspace_id: UUID) -> CountedWorkspace | None:
        """A workspace and its backup count, in one statement."""
        # Alone: the counted write that follows may be a transaction of its own, on
        # another connection (``write_alone``), so this one goes back at once.
        row = await self._db.fetch_alone(
            Q.WORKSPACE_GET_COUNTED, {"id": self._codec.uuid(workspace_id)}
        )
        return None if row is None else rows.counted_workspace_from_row(row, self._codec)

    async def count_created_by(self, user_id: UUID) -> int:
        """How many existing workspaces ``user_id`` created."""
        return count_of(
            await self._db.fetch_one(
                Q.WORKSPACE_COUNT_CREATED_BY, {"user_id": self._codec.uuid(user_id)}
            )
        )


class SqlMembershipRepository(SqlRepository):
    """Memberships."""

    async def add(self, membership: Membership) -> None:
        """Store a membership."""
        inserted = await self._db.execute(
            Q.MEMBERSHIP_INSERT, rows.membership_params(membership, self._codec)
        )
        require(inserted == 1, "workspace exists")

    async def get(self, workspace_id: UUID, user_id: UUID) -> Membership | None:
        """One person's membership of a workspace."""
        row = await self._db.fetch_one(
            Q.MEMBERSHIP_GET,
            {"workspace_id": self._codec.uuid(workspace_id), "user_id": self._codec.uuid(user_id)},
        )
        return None if row is None else rows.membership_from_row(row, self._codec)

    async def list_for_user(self, user_id: UUID, page: PageRequest) -> Page[MemberWorkspace]:
        """The workspaces a person belongs to, newest workspace first."""
        params, after = page_params(page, self._codec)
        params["user_id"] = self._codec.uuid(user_id)
        found = await self._db.fetch_all(
            Q.MEMBERSHIP_LIST_FOR_USER,
            params,
            filters=[Q.FILTER_MEMBERSHIP_AFTER] if after else [],
        )
        return page_of([rows.member_workspace_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many members a workspace has."""
        return count_of(
            await self._db.fetch_one(
                Q.MEMBERSHIP_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )

    async def list_members(self, workspace_id: UUID, page: PageRequest) -> Page[Member]:
        """A workspace's members, newest first by joining time."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.MEMBERSHIP_LIST_MEMBERS, params, filters=[Q.FILTER_MEMBER_AFTER] if after else []
        )
        return page_of([rows.member_from_row(row, self._codec) for row in found], page)

    async def update(self, membership: Membership) -> None:
        """Store a member's new role."""
        changed = await self._db.execute(
            Q.MEMBERSHIP_UPDATE,
            {
                "workspace_id": self._codec.uuid(membership.workspace_id),
                "user_id": self._codec.uuid(membership.user_id),
                "role": membership.role,
            },
        )
        require(changed == 1, "update of a missing membership")

    async def remove(self, workspace_id: UUID, user_id: UUID) -> None:
        """End a membership."""
        await self._db.execute(
            Q.MEMBERSHIP_DELETE,
            {"workspace_id": self._codec.uuid(workspace_id), "user_id": self._codec.uuid(user_id)},
        )

    async def count_with_role(self, workspace_id: UUID, role: str) -> int:
        """How many members of a workspace hold ``role``."""
        return count_of(
            await self._db.fetch_one(
                Q.MEMBERSHIP_COUNT_ROLE,
                {"workspace_id": self._codec.uuid(workspace_id), "role": role},
            )
        )


class SqlUserRepository(SqlRepository):
    """People."""

    async def add(self, user: User) -> None:
        """Store a new person."""
        await self._db.execute(Q.USER_INSERT, rows.user_params(user, self._codec))

    async def get(self, user_id: UUID, *, for_update: bool = False) -> User | None:
        """A person by id (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.USER_GET, {"id": self._codec.uuid(user_id)}, writes=for_update
        )
        return None if row is None else rows.user_from_row(row, self._codec)

    async def get_by_subject(self, subject: str) -> User | None:
        """A person by their identity provider subject."""
        row = await self._db.fetch_one(Q.USER_GET_BY_SUBJECT, {"idp_subject": subject})
        return None if row is None else rows.user_from_row(row, self._codec)


class SqlSessionRepository(SqlRepository):
    """Sessions."""

    async def add(self, session: Session, origin: str | None = None) -> None:
        """Store a new session, with the grant it was made from."""
        params = {**rows.session_params(session, self._codec), "origin": origin}
        await self._db.execute(Q.SESSION_INSERT, params)

    async def origin_of(self, session_id: UUID) -> str | None:
        """The grant a session was made from, if any."""
        row = await self._db.fetch_one(Q.SESSION_ORIGIN, {"id": self._codec.uuid(session_id)})
        origin = None if row is None else row["origin"]
        return origin if isinstance(origin, str) else None

    async def revoke_from(self, origin: str, at: datetime) -> int:
        """End every live session made from the grant ``origin``."""
        params = {"origin": origin, "revoked_at": self._codec.timestamp(at)}
        return await self._db.execute(Q.SESSION_REVOKE_FROM, params)

    async def find(self, token_hash: str) -> SessionGrant | None:
        """The session with this token hash, its person and role, in one query."""
        row = await self._db.fetch_one(Q.SESSION_FIND, {"token_hash": token_hash})
        return None if row is None else rows.session_grant_from_row(row, self._codec)

    async def find_with_backup(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Backup | None] | None:
        """``find`` and one backup of the session's workspace, in one statement."""
        params = {"token_hash": token_hash, "id": self._codec.uuid(backup_id)}
        row = await self._db.fetch_one(Q.SESSION_FIND_WITH_BACKUP, params)
        if row is None:
            return None
        return (
            rows.session_grant_from_row(joined_session(row), self._codec),
            None if row["id"] is None else rows.backup_from_row(row, self._codec),
        )

    async def find_with_backups(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Page[Backup]] | None:
        """``find`` and a page of the session's workspace's backups, in one statement."""
        params, after = page_params(page, self._codec)
        params["token_hash"] = token_hash
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_BACKUP_AFTER] if after else []
        found = await self._db.fetch_all(Q.SESSION_FIND_WITH_BACKUPS, params, filters=filters)
        if not found:
            return None
        backups = [rows.backup_from_row(row, self._codec) for row in found if row["id"] is not None]
        grant = rows.session_grant_from_row(joined_session(found[0]), self._codec)
        return grant, page_of(backups, page)

    async def find_with_backup_json(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Rendered | None] | None:
        """``find`` and one backup of the session's workspace as the API's JSON, rendered
        by the database, in one statement."""
        params = {"token_hash": token_hash, "id": self._codec.uuid(backup_id)}
        row = await self._db.fetch_alone(Q.SESSION_FIND_WITH_BACKUP_BODY, params)
        if row is None:
            return None
        body = row["body"]
        return (
            joined_grant(row, self._codec),
            None if body is None else Rendered(body.encode()),
        )

    async def find_with_backups_json(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Rendered] | None:
        """``find`` and a page of the session's workspace's backups as the API's JSON: the
        database renders and joins the items, this wraps them in the list's envelope."""
        params, after = page_params(page, self._codec)
        params["page_size"] = page.limit
        params["token_hash"] = token_hash
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_BACKUP_AFTER] if after else []
        row = await self._db.fetch_alone(Q.SESSION_FIND_WITH_BACKUPS_BODY, params, filters=filters)
        if row is None:
            return None
        return joined_grant(row, self._codec), Rendered(rows.page_json(row, self._codec))

    async def find_with_workspace(
        self, token_hash: str, workspace_id: UUID
    ) -> tuple[SessionGrant, CountedWorkspace | None] | None:
        """``find`` and the session's workspace with its backup count, in one statement."""
        params = {"token_hash": token_hash, "workspace_id": self._codec.uuid(workspace_id)}
        row = await self._db.fetch_alone(Q.SESSION_FIND_WITH_WORKSPACE, params)
        if row is None:
            return None
        return (
            joined_grant(row, self._codec),
            None if row["id"] is None else rows.counted_workspace_from_row(row, self._codec),
        )

    async def revoke(self, session_id: UUID, at: datetime) -> None:
        """End a session (a second revocation keeps the first time)."""
        await self._db.execute(
            Q.SESSION_REVOKE,
            {"id": self._codec.uuid(session_id), "revoked_at": self._codec.timestamp(at)},
        )


class SqlRoleRepository(SqlRepository):
    """Custom roles, by (workspace, slug)."""

    async def add(self, workspace_id: UUID, role: Role) -> None:
        """Store a custom role; ``NameTakenError`` if the slug is taken."""
        await self._db.execute(Q.ROLE_INSERT, rows.role_params(workspace_id, role, self._codec))

    async def get(self, workspace_id: UUID, slug: str) -> Role | None:
        """A custom role by slug."""
        row = await self._db.fetch_one(
            Q.ROLE_GET, {"workspace_id": self._codec.uuid(workspace_id), "slug": slug}
        )
        return None if row is None else rows.role_from_row(row, self._codec)

    async def list(self, workspace_id: UUID) -> list[Role]:
        """Every custom role of a workspace, by slug."""
        found = await self._db.fetch_all(
            Q.ROLE_LIST, {"workspace_id": self._codec.uuid(workspace_id)}
        )
        return [rows.role_from_row(row, self._codec) for row in found]

    async def update(self, workspace_id: UUID, role: Role) -> None:
        """Store a changed custom role."""
        changed = await self._db.execute(
            Q.ROLE_UPDATE, rows.role_params(workspace_id, role, self._codec)
        )
        require(changed == 1, "update of a missing role")

    async def remove(self, workspace_id: UUID, slug: str) -> None:
        """Delete a custom role."""
        await self._db.execute(
            Q.ROLE_DELETE, {"workspace_id": self._codec.uuid(workspace_id), "slug": slug}
        )


class SqlInvitationRepository(SqlRepository):
    """Invitations."""

    def _key(self, workspace_id: UUID, invitation_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "id": self._codec.uuid(invitation_id),
        }

    async def add(self, invitation: Invitation) -> None:
        """Store a new invitation."""
        await self._db.execute(Q.INVITATION_INSERT, rows.invitation_params(invitation, self._codec))

    async def get(self, workspace_id: UUID, invitation_id: UUID) -> Invitation | None:
        """An invitation of this workspace."""
        row = await self._db.fetch_one(Q.INVITATION_GET, self._key(workspace_id, invitation_id))
        return None if row is None else rows.invitation_from_row(row, self._codec)

    async def get_for_email(self, invitation_id: UUID, email: str) -> Invitation | None:
        """An invitation addressed to ``email``, locked until the unit of work ends."""
        row = await self._db.fetch_one(
            Q.INVITATION_GET_FOR_EMAIL,
            {"id": self._codec.uuid(invitation_id), "email_key": email_key(email)},
            writes=True,
        )
        return None if row is None else rows.invitation_from_row(row, self._codec)

    async def update(self, invitation: Invitation) -> None:
        """Store a used invitation."""
        params = self._key(invitation.workspace_id, invitation.id)
        params["accepted_at"] = (
            None
            if invitation.accepted_at is None
            else self._codec.timestamp(invitation.accepted_at)
        )
        require(await self._db.execute(Q.INVITATION_UPDATE, params) == 1, "update of an invitation")

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Invitation]:
        """A workspace's invitations, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.INVITATION_LIST, params, filters=[Q.FILTER_INVITATION_AFTER] if after else []
        )
        return page_of([rows.invitation_from_row(row, self._codec) for row in found], page)

    async def count_pending(
        self, workspace_id: UUID, now: datetime, role: str | None = None
    ) -> int:
        """Invitations neither used nor expired at ``now``."""
        params: Params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "now": self._codec.timestamp(now),
        }
        filters: list[Q] = []
        if role is not None:
            params["role"] = role
            filters.append(Q.FILTER_INVITATION_ROLE)
        return count_of(
            await self._db.fetch_one(Q.INVITATION_COUNT_PENDING, params, filters=filters)
        )
