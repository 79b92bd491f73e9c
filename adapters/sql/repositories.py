"""SQL repositories, shared by SQLite and PostgreSQL.

Each repository runs named queries (``queries/*.sql``) through ``Statements``, the one
transaction of its unit of work, and maps rows with ``rows``. Every method is a coroutine:
it awaits its statements. Everything dialect-specific
(placeholders, value encoding, locking, error translation) lives behind ``Statements``.

Reads that come before a unit of work's first write or lock run on their own (autocommit,
one round trip each); the first statement that writes or locks opens the transaction that
every later statement of the unit joins. In PostgreSQL's READ COMMITTED each statement sees
a fresh snapshot anyway, so this changes no result; it saves two round trips on every
read-only unit of work.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol
from uuid import UUID

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Codec, Params, Row
from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.artifacts import Artifact, ArtifactStorage
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup
from strongroom.domain.invitations import Invitation
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.names import email_key, name_key
from strongroom.domain.pagination import Page, PageRequest, page_of
from strongroom.domain.permissions import BUILTIN_ROLES, Permission, Role
from strongroom.domain.principals import Session
from strongroom.domain.quotas import QuotaResource
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
from strongroom.ports.driven.repositories import (
    AuditFilter,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
    Rendered,
    SessionGrant,
)

Fetch = Literal["one", "all", "count"]
# One statement of ``Statements.write_all``: the query, its parameters, what it answers.
Step = tuple[Q, Params, Fetch]


class Statements(Protocol):
    """The statements of one unit of work, in one dialect.

    Driver errors come out translated: refusals (``NameTakenError``...),
    ``IntegrityViolationError`` for other constraints, ``UpstreamUnavailableError`` when the
    database does not answer.
    """

    codec: Codec

    async def fetch_one(
        self, query: Q, params: Params, *, filters: Sequence[Q] = (), writes: bool = False
    ) -> Row | None:
        """The first row of ``query``; ``writes`` when it writes or locks rows (a locking
        read's ``/*lock*/`` marker then becomes the dialect's row lock)."""
        ...

    async def fetch_alone(
        self, query: Q, params: Params, *, filters: Sequence[Q] = ()
    ) -> Row | None:
        """``fetch_one`` of a read after which the unit runs no other statement (a joined
        look-up answered as it is): the connection may be released at once."""
        ...

    async def fetch_all(self, query: Q, params: Params, *, filters: Sequence[Q] = ()) -> list[Row]:
        """Every row of a read."""
        ...

    async def execute(self, query: Q, params: Params) -> int:
        """Run a write; the number of rows it changed."""
        ...

    async def write_all(self, steps: Sequence[Step]) -> list[Any]:
        """Run ``steps`` in order inside the write transaction: for each, its first row,
        every row or the number of rows it changed, as its ``Fetch`` says.

        On PostgreSQL they go in one pipeline (with ``BEGIN`` when the unit has not written
        yet): one round trip. The commit stays the unit's own, a round trip of its own, so
        a connection lost before it commits nothing.
        """
        ...

    async def write_alone(self, query: Q, params: Params) -> Row | None:
        """Run ``query`` as a transaction of its own, committed before it returns, as the
        unit's first statement; the first row of its last statement.

        On PostgreSQL it is one statement in autocommit (data-modifying CTEs): one round
        trip, its locks held only while it runs and commits. On SQLite the text may be a
        script of several statements, run between ``BEGIN IMMEDIATE`` and ``COMMIT`` in one
        hop to a thread. It may be retried after a lost connection, so it must be written
        to do nothing twice.
        """
        ...


def _require(present: bool, what: str) -> None:
    if not present:
        raise IntegrityViolationError(what)


def _page_params(page: PageRequest, codec: Codec) -> tuple[Params, bool]:
    """``limit`` (one more than shown, to see whether a next page exists) and the cursor."""
    params: Params = {"limit": page.limit + 1}
    if page.after is None:
        return params, False
    params["after_created_at"] = codec.timestamp(page.after.created_at)
    params["after_id"] = codec.uuid(page.after.id)
    return params, True


def _admitted_backup_params(
    backup: Backup, event: AuditEvent, admission: Admission, codec: Codec
) -> tuple[Params, Params]:
    """The parameters of ``backup_insert_admitted`` and ``audit_insert_if_backup`` (no
    session scope: ``token_hash`` None)."""
    if admission.resource is not QuotaResource.BACKUPS_PER_WORKSPACE:
        raise ValueError(f"backups are admitted against their own quota, not {admission}")
    insert = rows.backup_params(backup, codec)
    insert["billing_states"] = codec.text_list(_billing_states(admission))
    insert["default_limit"] = admission.default_limit
    insert["token_hash"] = None
    audit = rows.audit_params(event, codec)
    audit["backup_id"] = codec.uuid(backup.id)
    audit["token_hash"] = None
    return insert, audit


@functools.cache
def _billing_states(admission: Admission) -> list[str]:
    """The billing states that admit (worked out once per admission, not per create)."""
    return sorted(state.value for state in admission.billing_states)


# The columns a draft leaves NULL: ``backup_create_in_session`` writes them as NULL itself
# (fewer parameters to build and adapt on every create).
_DRAFT_NULLS = (
    "source",
    "sealed_credentials",
    "schedule",
    "worker_id",
    "retention",
    "sealed_destination_credentials",
    "next_run_at",
)


def _session_create_params(
    backup: Backup,
    event: AuditEvent,
    token_hash: str,
    now: datetime,
    lists: tuple[str, str, str, str],
    admission: Admission,
    codec: Codec,
) -> Params:
    """The parameters of ``backup_create_in_session``: the draft's columns (those it
    leaves NULL are in the text), the event's own, the session's token and the checks'.
    Lists are comma-separated text (none of these values holds a comma): psycopg adapts a
    list as an array, a few times the cost of a string."""
    if admission.resource is not QuotaResource.BACKUPS_PER_WORKSPACE:
        raise ValueError(f"backups are admitted against their own quota, not {admission}")
    for field in _DRAFT_NULLS:
        if getattr(backup, field) is not None:
            raise ValueError(f"a session's create writes a draft: {field} is set")
    changes = event.changes
    return {
        "id": codec.uuid(backup.id),
        "workspace_id": codec.uuid(backup.workspace_id),
        "name": backup.name,
        "name_key": name_key(backup.name),
        "kind": backup.kind.value,
        "state": backup.state.value,
        "paused": backup.paused,
        "destination": codec.json(rows.destination_to_json(backup.destination)),
        "created_at": codec.timestamp(backup.created_at),
        "updated_at": codec.timestamp(backup.updated_at),
        "event_id": codec.uuid(event.id),
        "occurred_at": codec.timestamp(event.occurred_at),
        "actor_type": event.actor.type.value,
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "request_id": event.request_id,
        "outcome": event.outcome.value,
        "changes": None
        if changes is None
        else codec.json(
            {field: {"before": c.before, "after": c.after} for field, c in changes.items()}
        ),
        "token_hash": token_hash,
        "now": codec.timestamp(now),
        "billing_states": lists[0],
        "granting_builtin": lists[1],
        "builtin": lists[2],
        "permissions": lists[3],
        "default_limit": admission.default_limit,
    }


@functools.cache
def _create_lists(
    admission: Admission, permissions: tuple[Permission, ...]
) -> tuple[str, str, str, str]:
    """The list parameters of ``backup_create_in_session``, comma-separated: the billing
    states that admit, the built-in roles holding one of ``permissions``, every built-in
    role, and the permissions."""
    granting = [
        slug
        for slug, role in BUILTIN_ROLES.items()
        if any(permission in role.permissions for permission in permissions)
    ]
    lists = (
        _billing_states(admission),
        sorted(granting),
        sorted(BUILTIN_ROLES),
        [permission.value for permission in permissions],
    )
    if any("," in value for values in lists for value in values):
        raise ValueError("a comma inside a value of a comma-separated list")
    first, second, third, fourth = (",".join(values) for values in lists)
    return first, second, third, fourth


def _joined_session(row: Row) -> Row:
    """The session's columns (``g_*``) of a row that joins a session with its read."""
    # keys(): iterating a sqlite3.Row yields its values, not its column names.
    return {name[2:]: row[name] for name in row.keys() if name.startswith("g_")}  # noqa: SIM118


_GRANTS_KEPT = 4096
# Decoded grants by their joined columns' values (see ``_joined_grant``).
_grants: dict[tuple[object, ...], SessionGrant] = {}


_ROLE_PERMISSIONS = "g_role_permissions"
# The other ``g_*`` columns' getter, by the row's columns (one entry per statement).
_grant_columns: dict[tuple[str, ...], Callable[[Row], tuple[object, ...]]] = {}


def _grant_columns_of(row: Row) -> Callable[[Row], tuple[object, ...]]:
    """A getter of the row's ``g_*`` columns but the role's permissions, in order."""
    columns = tuple(row.keys())
    getter = _grant_columns.get(columns)
    if getter is None:
        names = [n for n in columns if n.startswith("g_") and n != _ROLE_PERMISSIONS]
        if len(names) < 2 or _ROLE_PERMISSIONS not in columns:
            raise ValueError(f"not a session's joined columns: {columns}")
        getter = _grant_columns[columns] = operator.itemgetter(*names)
    return getter


def _joined_grant(row: Row, codec: Codec) -> SessionGrant:
    """``session_grant_from_row`` of a row's ``g_*`` columns, decoded once per distinct
    set of values: the grant is a pure function of them (frozen values; every column that
    a check reads, the revocation and expiry included, is part of the key), so this
    caches no decision, only the decoding (the database is asked at every request)."""
    permissions = row[_ROLE_PERMISSIONS]
    if isinstance(permissions, list):  # a PostgreSQL array (SQLite keeps JSON text)
        permissions = tuple(permissions)
    key = (type(codec), permissions, *_grant_columns_of(row)(row))
    grant = _grants.get(key)
    if grant is None:
        grant = rows.session_grant_from_row(_joined_session(row), codec)
        if len(_grants) >= _GRANTS_KEPT:
            _grants.clear()
        _grants[key] = grant
    return grant


def _count(row: Row | None) -> int:
    return 0 if row is None else int(row["n"])


class _Repository:
    def __init__(self, statements: Statements) -> None:
        self._db = statements
        self._codec = statements.codec


class SqlWorkspaceRepository(_Repository):
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
        _require(changed == 1, "update of a missing workspaces row")

    async def remove(self, workspace_id: UUID) -> None:
        """Delete a workspace with its members, sessions, backups, audit, workers, roles."""
        await self._db.execute(Q.WORKSPACE_DELETE, {"id": self._codec.uuid(workspace_id)})

    async def count_created_by(self, user_id: UUID) -> int:
        """How many existing workspaces ``user_id`` created."""
        return _count(
            await self._db.fetch_one(
                Q.WORKSPACE_COUNT_CREATED_BY, {"user_id": self._codec.uuid(user_id)}
            )
        )


class SqlMembershipRepository(_Repository):
    """Memberships."""

    async def add(self, membership: Membership) -> None:
        """Store a membership."""
        inserted = await self._db.execute(
            Q.MEMBERSHIP_INSERT, rows.membership_params(membership, self._codec)
        )
        _require(inserted == 1, "workspace exists")

    async def get(self, workspace_id: UUID, user_id: UUID) -> Membership | None:
        """One person's membership of a workspace."""
        row = await self._db.fetch_one(
            Q.MEMBERSHIP_GET,
            {"workspace_id": self._codec.uuid(workspace_id), "user_id": self._codec.uuid(user_id)},
        )
        return None if row is None else rows.membership_from_row(row, self._codec)

    async def list_for_user(self, user_id: UUID, page: PageRequest) -> Page[MemberWorkspace]:
        """The workspaces a person belongs to, newest workspace first."""
        params, after = _page_params(page, self._codec)
        params["user_id"] = self._codec.uuid(user_id)
        found = await self._db.fetch_all(
            Q.MEMBERSHIP_LIST_FOR_USER,
            params,
            filters=[Q.FILTER_MEMBERSHIP_AFTER] if after else [],
        )
        return page_of([rows.member_workspace_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many members a workspace has."""
        return _count(
            await self._db.fetch_one(
                Q.MEMBERSHIP_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )

    async def list_members(self, workspace_id: UUID, page: PageRequest) -> Page[Member]:
        """A workspace's members, newest first by joining time."""
        params, after = _page_params(page, self._codec)
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
        _require(changed == 1, "update of a missing membership")

    async def remove(self, workspace_id: UUID, user_id: UUID) -> None:
        """End a membership."""
        await self._db.execute(
            Q.MEMBERSHIP_DELETE,
            {"workspace_id": self._codec.uuid(workspace_id), "user_id": self._codec.uuid(user_id)},
        )

    async def count_with_role(self, workspace_id: UUID, role: str) -> int:
        """How many members of a workspace hold ``role``."""
        return _count(
            await self._db.fetch_one(
                Q.MEMBERSHIP_COUNT_ROLE,
                {"workspace_id": self._codec.uuid(workspace_id), "role": role},
            )
        )


class SqlUserRepository(_Repository):
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


class SqlSessionRepository(_Repository):
    """Sessions."""

    async def add(self, session: Session) -> None:
        """Store a new session."""
        await self._db.execute(Q.SESSION_INSERT, rows.session_params(session, self._codec))

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
            rows.session_grant_from_row(_joined_session(row), self._codec),
            None if row["id"] is None else rows.backup_from_row(row, self._codec),
        )

    async def find_with_backups(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Page[Backup]] | None:
        """``find`` and a page of the session's workspace's backups, in one statement."""
        params, after = _page_params(page, self._codec)
        params["token_hash"] = token_hash
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_BACKUP_AFTER] if after else []
        found = await self._db.fetch_all(Q.SESSION_FIND_WITH_BACKUPS, params, filters=filters)
        if not found:
            return None
        backups = [rows.backup_from_row(row, self._codec) for row in found if row["id"] is not None]
        grant = rows.session_grant_from_row(_joined_session(found[0]), self._codec)
        return grant, page_of(backups, page)

    async def find_with_backup_json(
        self, token_hash: str, backup_id: UUID
    ) -> tuple[SessionGrant, Rendered | None] | None:
        """``find`` and one backup of the session's workspace as the API's JSON, rendered
        by the database, in one statement."""
        params = {"token_hash": token_hash, "id": self._codec.uuid(backup_id)}
        row = await self._db.fetch_alone(Q.SESSION_FIND_WITH_BACKUP_JSON, params)
        if row is None:
            return None
        body = row["body"]
        return (
            _joined_grant(row, self._codec),
            None if body is None else Rendered(body.encode()),
        )

    async def find_with_backups_json(
        self, token_hash: str, workspace_id: UUID, page: PageRequest
    ) -> tuple[SessionGrant, Rendered] | None:
        """``find`` and a page of the session's workspace's backups as the API's JSON: the
        database renders and joins the items, this wraps them in the list's envelope."""
        params, after = _page_params(page, self._codec)
        params["page_size"] = page.limit
        params["token_hash"] = token_hash
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_BACKUP_AFTER] if after else []
        row = await self._db.fetch_alone(Q.SESSION_FIND_WITH_BACKUPS_JSON, params, filters=filters)
        if row is None:
            return None
        return _joined_grant(row, self._codec), Rendered(rows.page_json(row, self._codec))

    async def find_adding_backup(
        self, token_hash: str, backup: Backup, event: AuditEvent, admission: Admission
    ) -> tuple[SessionGrant, bool] | None:
        """``find`` and the admitted insert of the backup and its event (scoped and
        attributed by the session in SQL), with BEGIN: one round trip on PostgreSQL."""
        insert, audit = _admitted_backup_params(backup, event, admission, self._codec)
        insert["token_hash"] = audit["token_hash"] = token_hash
        row, inserted, _ = await self._db.write_all(
            [
                (Q.SESSION_FIND, {"token_hash": token_hash}, "one"),
                (Q.BACKUP_INSERT_ADMITTED, insert, "count"),
                (Q.AUDIT_INSERT_IF_BACKUP, audit, "count"),
            ]
        )
        if row is None:
            return None
        return rows.session_grant_from_row(row, self._codec), inserted == 1

    async def create_backup(
        self,
        token_hash: str,
        backup: Backup,
        event: AuditEvent,
        admission: Admission,
        permissions: Sequence[Permission],
        now: datetime,
    ) -> bool:
        """The checks and the writes in one statement committed on its own (PostgreSQL:
        one round trip) or one script in one hop (SQLite): ``backup_create_in_session``."""
        params = _session_create_params(
            backup,
            event,
            token_hash,
            now,
            _create_lists(admission, tuple(permissions)),
            admission,
            self._codec,
        )
        row = await self._db.write_alone(Q.BACKUP_CREATE_IN_SESSION, params)
        if row is not None and int(row["created"]) == 1:
            return True
        # Refused, or a retried statement that found its earlier attempt committed after
        # its snapshot: a fresh look tells them apart (refusals only; each costs more).
        key = {"workspace_id": params["workspace_id"], "id": params["id"]}
        return await self._db.fetch_one(Q.BACKUP_GET, key) is not None

    async def revoke(self, session_id: UUID, at: datetime) -> None:
        """End a session (a second revocation keeps the first time)."""
        await self._db.execute(
            Q.SESSION_REVOKE,
            {"id": self._codec.uuid(session_id), "revoked_at": self._codec.timestamp(at)},
        )


class SqlBackupRepository(_Repository):
    """Backups; names are unique per workspace case-insensitively (``backups_name_unique``)."""

    def _key(self, workspace_id: UUID, backup_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(backup_id)}

    async def add(self, backup: Backup) -> None:
        """Store a new backup; ``NameTakenError`` if its name is used."""
        await self._db.execute(Q.BACKUP_INSERT, rows.backup_params(backup, self._codec))

    async def add_admitted(self, backup: Backup, event: AuditEvent, admission: Admission) -> bool:
        """The backup and its audit event if the workspace admits it: one round trip on
        PostgreSQL (the quota reads the usage counter of migration 0004)."""
        insert, audit = _admitted_backup_params(backup, event, admission, self._codec)
        inserted, _ = await self._db.write_all(
            [
                (Q.BACKUP_INSERT_ADMITTED, insert, "count"),
                (Q.AUDIT_INSERT_IF_BACKUP, audit, "count"),
            ]
        )
        return bool(inserted == 1)

    async def get(
        self, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
    ) -> Backup | None:
        """A backup of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.BACKUP_GET, self._key(workspace_id, backup_id), writes=for_update
        )
        return None if row is None else rows.backup_from_row(row, self._codec)

    async def update(self, backup: Backup) -> None:
        """Store a changed backup; ``NameTakenError`` if its new name is used."""
        changed = await self._db.execute(Q.BACKUP_UPDATE, rows.backup_params(backup, self._codec))
        _require(changed == 1, "update of a missing backup")

    async def remove(self, workspace_id: UUID, backup_id: UUID) -> None:
        """Delete a backup (nothing happens when there is none)."""
        await self._db.execute(Q.BACKUP_DELETE, self._key(workspace_id, backup_id))

    async def list(
        self, workspace_id: UUID, page: PageRequest, worker_id: UUID | None = None
    ) -> Page[Backup]:
        """A workspace's backups, newest first (only a worker's, with ``worker_id``)."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters: list[Q] = []
        if worker_id is not None:
            params["worker_id"] = self._codec.uuid(worker_id)
            filters.append(Q.FILTER_BACKUP_WORKER)
        if after:
            filters.append(Q.FILTER_BACKUP_AFTER)
        found = await self._db.fetch_all(Q.BACKUP_LIST, params, filters=filters)
        return page_of([rows.backup_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many backups a workspace has."""
        return _count(
            await self._db.fetch_one(
                Q.BACKUP_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )

    async def due(self, now: datetime, limit: int) -> Sequence[Backup]:
        """Scheduled backups whose slot has come, soonest first (index ``backups_due``)."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.BACKUP_DUE, params)
        return [rows.backup_from_row(row, self._codec) for row in found]

    async def advance_schedule(
        self, workspace_id: UUID, backup_id: UUID, expected: datetime, next_run_at: datetime
    ) -> bool:
        """Compare-and-set of ``next_run_at`` (the update's row lock serialises rivals)."""
        params = self._key(workspace_id, backup_id)
        params["expected"] = self._codec.timestamp(expected)
        params["next_run_at"] = self._codec.timestamp(next_run_at)
        return await self._db.execute(Q.BACKUP_ADVANCE_SCHEDULE, params) == 1


class SqlRunRepository(_Repository):
    """Runs; ``runs_backup_fkey`` ties each to a backup of its own workspace."""

    def _key(self, workspace_id: UUID, run_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(run_id)}

    async def add(self, run: Run) -> None:
        """Store a new run."""
        await self._db.execute(Q.RUN_INSERT, rows.run_params(run, self._codec))

    async def get(
        self, workspace_id: UUID, run_id: UUID, *, for_update: bool = False
    ) -> Run | None:
        """A run of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.RUN_GET, self._key(workspace_id, run_id), writes=for_update
        )
        return None if row is None else rows.run_from_row(row, self._codec)

    async def update(self, run: Run) -> None:
        """Store a changed run."""
        changed = await self._db.execute(Q.RUN_UPDATE, rows.run_params(run, self._codec))
        _require(changed == 1, "update of a missing run")

    async def lease_expired(self, now: datetime, limit: int) -> list[Run]:
        """Running runs whose lease ran out, soonest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.RUN_LEASE_EXPIRED, params)
        return [rows.run_from_row(row, self._codec) for row in found]

    async def has_open(self, workspace_id: UUID, backup_id: UUID) -> bool:
        """Whether the backup has a queued or running run."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        return _count(await self._db.fetch_one(Q.RUN_OPEN_EXISTS, params)) > 0

    async def announce_queued(self, workspace_id: UUID) -> None:
        """PostgreSQL: ``pg_notify`` in the write transaction (delivered at commit);
        SQLite: nothing to say."""
        params = {"workspace_id": self._codec.uuid(workspace_id)}
        await self._db.fetch_one(Q.RUN_ANNOUNCE, params, writes=True)

    async def next_queued(self, workspace_id: UUID, worker_id: UUID) -> Run | None:
        """The oldest queued run of the worker's backups, locked (skipping locked ones)."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "worker_id": self._codec.uuid(worker_id),
        }
        row = await self._db.fetch_one(Q.RUN_NEXT_QUEUED, params, writes=True)
        return None if row is None else rows.run_from_row(row, self._codec)

    async def next_queued_cloud(self) -> Run | None:
        """The oldest queued run of a cloud backup, locked (skipping locked ones)."""
        row = await self._db.fetch_one(Q.RUN_NEXT_QUEUED_CLOUD, {}, writes=True)
        return None if row is None else rows.run_from_row(row, self._codec)

    async def list_for_backup(
        self, workspace_id: UUID, backup_id: UUID, state: RunState | None, page: PageRequest
    ) -> Page[Run]:
        """A backup's runs, newest first (only those in ``state``, when given)."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        params["backup_id"] = self._codec.uuid(backup_id)
        filters: list[Q] = []
        if state is not None:
            params["state"] = state.value
            filters.append(Q.FILTER_RUN_STATE)
        if after:
            filters.append(Q.FILTER_RUN_AFTER)
        found = await self._db.fetch_all(Q.RUN_LIST_FOR_BACKUP, params, filters=filters)
        return page_of([rows.run_from_row(row, self._codec) for row in found], page)


class SqlRestoreRepository(_Repository):
    """Restores; ``restores.artifact_id`` ties each to an artifact (cascading)."""

    def _key(self, workspace_id: UUID, restore_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "id": self._codec.uuid(restore_id),
        }

    async def add(self, restore: Restore) -> None:
        """Store a new restore."""
        await self._db.execute(Q.RESTORE_INSERT, rows.restore_params(restore, self._codec))

    async def get(
        self, workspace_id: UUID, restore_id: UUID, *, for_update: bool = False
    ) -> Restore | None:
        """A restore of this workspace (``for_update``: locked until the unit of work ends)."""
        row = await self._db.fetch_one(
            Q.RESTORE_GET, self._key(workspace_id, restore_id), writes=for_update
        )
        return None if row is None else rows.restore_from_row(row, self._codec)

    async def update(self, restore: Restore) -> None:
        """Store a changed restore."""
        changed = await self._db.execute(
            Q.RESTORE_UPDATE, rows.restore_params(restore, self._codec)
        )
        _require(changed == 1, "update of a missing restore")

    async def next_queued(self) -> Restore | None:
        """The oldest queued restore, locked (skipping those other runners hold)."""
        row = await self._db.fetch_one(Q.RESTORE_NEXT_QUEUED, {}, writes=True)
        return None if row is None else rows.restore_from_row(row, self._codec)

    async def lease_expired(self, now: datetime, limit: int) -> list[Restore]:
        """Running restores whose lease ran out, soonest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.RESTORE_LEASE_EXPIRED, params)
        return [rows.restore_from_row(row, self._codec) for row in found]


class SqlArtifactRepository(_Repository):
    """Artifacts; ``artifacts_run_fkey`` ties each to a run of its backup and workspace."""

    def _key(self, workspace_id: UUID, artifact_id: UUID) -> Params:
        return {
            "workspace_id": self._codec.uuid(workspace_id),
            "id": self._codec.uuid(artifact_id),
        }

    def _one(self, row: Row | None) -> Artifact | None:
        return None if row is None else rows.artifact_from_row(row, self._codec)

    async def add(self, artifact: Artifact) -> None:
        """Store a new artifact."""
        await self._db.execute(Q.ARTIFACT_INSERT, rows.artifact_params(artifact, self._codec))

    async def get(
        self, workspace_id: UUID, artifact_id: UUID, *, for_update: bool = False
    ) -> Artifact | None:
        """An artifact of this workspace (``for_update``: locked until the unit of work
        ends)."""
        return self._one(
            await self._db.fetch_one(
                Q.ARTIFACT_GET, self._key(workspace_id, artifact_id), writes=for_update
            )
        )

    async def update(self, artifact: Artifact) -> None:
        """Store a changed artifact."""
        changed = await self._db.execute(
            Q.ARTIFACT_UPDATE, rows.artifact_params(artifact, self._codec)
        )
        _require(changed == 1, "update of a missing artifact")

    async def find_in_run(self, workspace_id: UUID, run_id: UUID, name: str) -> Artifact | None:
        """The artifact of this name in a run."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "run_id": self._codec.uuid(run_id),
            "name": name,
        }
        return self._one(await self._db.fetch_one(Q.ARTIFACT_FIND_IN_RUN, params))

    async def list_for_run(self, workspace_id: UUID, run_id: UUID) -> list[Artifact]:
        """Every artifact of a run, oldest first."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "run_id": self._codec.uuid(run_id),
        }
        found = await self._db.fetch_all(Q.ARTIFACT_LIST_FOR_RUN, params)
        return [rows.artifact_from_row(row, self._codec) for row in found]

    async def count_available(self, workspace_id: UUID, backup_id: UUID) -> int:
        """How many available artifacts a backup has."""
        params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "backup_id": self._codec.uuid(backup_id),
        }
        return _count(await self._db.fetch_one(Q.ARTIFACT_COUNT_AVAILABLE, params))

    async def any_locked(
        self,
        workspace_id: UUID,
        now: datetime,
        *,
        backup_id: UUID | None = None,
        storage: ArtifactStorage | None = None,
    ) -> bool:
        """Whether an available artifact is locked at ``now``."""
        params: Params = {
            "workspace_id": self._codec.uuid(workspace_id),
            "now": self._codec.timestamp(now),
        }
        filters = []
        if backup_id is not None:
            params["backup_id"] = self._codec.uuid(backup_id)
            filters.append(Q.FILTER_ARTIFACT_BACKUP)
        if storage is not None:
            params["storage"] = storage.value
            filters.append(Q.FILTER_ARTIFACT_STORAGE)
        return _count(await self._db.fetch_one(Q.ARTIFACT_ANY_LOCKED, params, filters=filters)) > 0

    async def storage_bytes(self, workspace_id: UUID, *, with_pending: bool = False) -> int:
        """Total size of the available (and pending) artifacts in service storage."""
        params = {"workspace_id": self._codec.uuid(workspace_id)}
        filters = [Q.FILTER_ARTIFACT_PENDING] if with_pending else []
        return _count(await self._db.fetch_one(Q.ARTIFACT_STORAGE_BYTES, params, filters=filters))

    async def expired(self, now: datetime, limit: int) -> list[Artifact]:
        """Available artifacts whose expiry has passed, oldest expiry first."""
        params = {"now": self._codec.timestamp(now), "limit": limit}
        found = await self._db.fetch_all(Q.ARTIFACT_EXPIRED, params)
        return [rows.artifact_from_row(row, self._codec) for row in found]

    async def to_verify(
        self, limit: int, verified_before: datetime | None = None
    ) -> list[Artifact]:
        """Available artifacts whose verification is pending, then (``verified_before``)
        those never verified or last verified before it, least recently first."""
        params: Params = {"limit": limit}
        filters = []
        if verified_before is not None:
            params["verified_before"] = self._codec.timestamp(verified_before)
            filters.append(Q.FILTER_ARTIFACT_VERIFIED_BEFORE)
        found = await self._db.fetch_all(Q.ARTIFACT_TO_VERIFY, params, filters=filters)
        return [rows.artifact_from_row(row, self._codec) for row in found]

    async def list(self, workspace_id: UUID, deleted: bool, page: PageRequest) -> Page[Artifact]:
        """A workspace's artifacts, newest first."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        filters = [Q.FILTER_ARTIFACT_DELETED if deleted else Q.FILTER_ARTIFACT_NOT_DELETED]
        if after:
            filters.append(Q.FILTER_ARTIFACT_AFTER)
        found = await self._db.fetch_all(Q.ARTIFACT_LIST, params, filters=filters)
        return page_of([rows.artifact_from_row(row, self._codec) for row in found], page)


class SqlWorkerRepository(_Repository):
    """Workers; token hashes are unique (``workers_token_hash_unique``)."""

    def _key(self, workspace_id: UUID, worker_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(worker_id)}

    async def add(self, worker: Worker) -> None:
        """Store a new worker."""
        await self._db.execute(Q.WORKER_INSERT, rows.worker_params(worker, self._codec))

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        """Whether this workspace has this worker."""
        return (
            await self._db.fetch_one(Q.WORKER_EXISTS, self._key(workspace_id, worker_id))
            is not None
        )

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        """A worker of this workspace."""
        row = await self._db.fetch_one(Q.WORKER_GET, self._key(workspace_id, worker_id))
        return None if row is None else rows.worker_from_row(row, self._codec)

    async def find(self, token_hash: str) -> Worker | None:
        """The worker whose current credential has this hash."""
        row = await self._db.fetch_one(Q.WORKER_FIND, {"token_hash": token_hash})
        return None if row is None else rows.worker_from_row(row, self._codec)

    async def update(self, worker: Worker) -> None:
        """Store a changed worker (its creation time never changes)."""
        changed = await self._db.execute(Q.WORKER_UPDATE, rows.worker_params(worker, self._codec))
        _require(changed == 1, "update of a missing worker")

    async def touch(self, worker_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Record that the worker was seen, unless it was seen since ``stale_before``."""
        await self._db.execute(
            Q.WORKER_TOUCH,
            {
                "id": self._codec.uuid(worker_id),
                "at": self._codec.timestamp(at),
                "stale_before": self._codec.timestamp(stale_before),
            },
        )

    async def remove(self, workspace_id: UUID, worker_id: UUID) -> None:
        """Delete a worker of this workspace."""
        await self._db.execute(Q.WORKER_DELETE, self._key(workspace_id, worker_id))

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        """A workspace's workers, newest first."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.WORKER_LIST, params, filters=[Q.FILTER_WORKER_AFTER] if after else []
        )
        return page_of([rows.worker_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many workers a workspace has."""
        return _count(
            await self._db.fetch_one(
                Q.WORKER_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )


class SqlApiKeyRepository(_Repository):
    """API keys; token hashes are unique (``api_keys_token_hash_unique``)."""

    def _key(self, workspace_id: UUID, key_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(key_id)}

    async def add(self, key: ApiKey) -> None:
        """Store a new key."""
        await self._db.execute(Q.API_KEY_INSERT, rows.api_key_params(key, self._codec))

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        """A key of this workspace."""
        row = await self._db.fetch_one(Q.API_KEY_GET, self._key(workspace_id, key_id))
        return None if row is None else rows.api_key_from_row(row, self._codec)

    async def find(self, token_hash: str) -> ApiKey | None:
        """The key whose token has this hash."""
        row = await self._db.fetch_one(Q.API_KEY_FIND, {"token_hash": token_hash})
        return None if row is None else rows.api_key_from_row(row, self._codec)

    async def touch(self, key_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Record that the key was used, unless it was used since ``stale_before``."""
        await self._db.execute(
            Q.API_KEY_TOUCH,
            {
                "id": self._codec.uuid(key_id),
                "at": self._codec.timestamp(at),
                "stale_before": self._codec.timestamp(stale_before),
            },
        )

    async def remove(self, workspace_id: UUID, key_id: UUID) -> None:
        """Delete a key of this workspace."""
        await self._db.execute(Q.API_KEY_DELETE, self._key(workspace_id, key_id))

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        """A workspace's keys, newest first."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.API_KEY_LIST, params, filters=[Q.FILTER_API_KEY_AFTER] if after else []
        )
        return page_of([rows.api_key_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many keys a workspace has."""
        return _count(
            await self._db.fetch_one(
                Q.API_KEY_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )


class SqlRoleRepository(_Repository):
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
        _require(changed == 1, "update of a missing role")

    async def remove(self, workspace_id: UUID, slug: str) -> None:
        """Delete a custom role."""
        await self._db.execute(
            Q.ROLE_DELETE, {"workspace_id": self._codec.uuid(workspace_id), "slug": slug}
        )


class SqlInvitationRepository(_Repository):
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
        _require(
            await self._db.execute(Q.INVITATION_UPDATE, params) == 1, "update of an invitation"
        )

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Invitation]:
        """A workspace's invitations, newest first."""
        params, after = _page_params(page, self._codec)
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
        return _count(await self._db.fetch_one(Q.INVITATION_COUNT_PENDING, params, filters=filters))


class SqlAuditRepository(_Repository):
    """The audit trail."""

    async def add(self, event: AuditEvent) -> None:
        """Record an event."""
        await self._db.execute(Q.AUDIT_INSERT, rows.audit_params(event, self._codec))

    async def list(
        self, workspace_id: UUID, filters: AuditFilter, page: PageRequest
    ) -> Page[AuditEvent]:
        """A workspace's events, newest first, filtered."""
        params, after = _page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        fragments: list[Q] = []
        if filters.action is not None:
            fragments.append(Q.FILTER_AUDIT_ACTION)
            params["action"] = filters.action
        if filters.actor_id is not None:
            fragments.append(Q.FILTER_AUDIT_ACTOR)
            params["actor_id"] = self._codec.uuid(filters.actor_id)
        if filters.since is not None:
            fragments.append(Q.FILTER_AUDIT_SINCE)
            params["since"] = self._codec.timestamp(filters.since)
        if after:
            fragments.append(Q.FILTER_AUDIT_AFTER)
        found = await self._db.fetch_all(Q.AUDIT_LIST, params, filters=fragments)
        return page_of([rows.audit_from_row(row, self._codec) for row in found], page)


class SqlIdempotencyRepository(_Repository):
    """Idempotency keys, unique per (scope, key)."""

    async def reserve(self, record: IdempotencyRecord, expired_before: datetime) -> None:
        """Reserve a key; ``IdempotencyKeyTakenError`` if a live reservation holds it."""
        params = rows.idempotency_params(record, self._codec)
        params["expired_before"] = self._codec.timestamp(expired_before)
        if await self._db.fetch_one(Q.IDEMPOTENCY_RESERVE, params, writes=True) is None:
            raise IdempotencyKeyTakenError(record.key)

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        """A reserved key."""
        row = await self._db.fetch_one(Q.IDEMPOTENCY_GET, {"scope": scope, "idempotency_key": key})
        return None if row is None else rows.idempotency_from_row(row, self._codec)

    async def complete(self, scope: str, key: str, body: str) -> None:
        """Attach the request's result to a reserved key."""
        changed = await self._db.execute(
            Q.IDEMPOTENCY_COMPLETE,
            {"scope": scope, "idempotency_key": key, "body": body},
        )
        if changed != 1:
            raise IntegrityViolationError("complete of an unreserved key")

    async def purge(self, expired_before: datetime) -> int:
        """Delete the keys reserved before ``expired_before``; how many went."""
        return await self._db.execute(
            Q.IDEMPOTENCY_PURGE, {"expired_before": self._codec.timestamp(expired_before)}
        )


class SqlAccountRepository(_Repository):
    """Local accounts; emails are unique case-insensitively (``accounts_email_unique``)."""

    async def add(self, account: Account) -> None:
        """Store an account; ``NameTakenError`` if the email is taken."""
        await self._db.execute(Q.ACCOUNT_INSERT, rows.account_params(account, self._codec))

    async def get(self, account_id: UUID) -> Account | None:
        """An account by id."""
        row = await self._db.fetch_one(Q.ACCOUNT_GET, {"id": self._codec.uuid(account_id)})
        return None if row is None else rows.account_from_row(row, self._codec)

    async def get_by_email(self, email: str) -> Account | None:
        """An account by email, case-insensitively."""
        row = await self._db.fetch_one(Q.ACCOUNT_GET_BY_EMAIL, {"email_key": email_key(email)})
        return None if row is None else rows.account_from_row(row, self._codec)

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        """Remember a failed approval for ``email`` from the client ``address``."""
        await self._db.execute(
            Q.FAILED_LOGIN_INSERT,
            {
                "email_key": email_key(email),
                "client_address": address,
                "failed_at": self._codec.timestamp(at),
            },
        )

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        """The latest ``limit`` failed approvals from ``address`` (and ``email``), newest
        first."""
        parameters = {
            "client_address": address,
            "since": self._codec.timestamp(since),
            "limit": limit,
        }
        if email is None:
            found = await self._db.fetch_all(Q.FAILED_LOGIN_RECENT_BY_ADDRESS, parameters)
        else:
            parameters["email_key"] = email_key(email)
            found = await self._db.fetch_all(Q.FAILED_LOGIN_RECENT, parameters)
        return [self._codec.read_timestamp(row["failed_at"]) for row in found]

    async def purge_failed_logins(self, before: datetime) -> int:
        """Forget the failed approvals that happened before ``before``; how many went."""
        return await self._db.execute(
            Q.FAILED_LOGIN_PURGE, {"before": self._codec.timestamp(before)}
        )


class SqlDeviceGrantRepository(_Repository):
    """Device-code grants; each look-up gives the newest matching grant."""

    async def _find(self, query: Q, column: str, value: str, lock: bool) -> DeviceGrant | None:
        row = await self._db.fetch_one(query, {column: value}, writes=lock)
        return None if row is None else rows.device_grant_from_row(row, self._codec)

    async def add(self, grant: DeviceGrant) -> None:
        """Store a new grant."""
        await self._db.execute(Q.DEVICE_GRANT_INSERT, rows.device_grant_params(grant, self._codec))

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """A grant by the hash of its device code (``for_update``: locked until the unit of
        work ends)."""
        return await self._find(
            Q.DEVICE_GRANT_BY_DEVICE_CODE, "device_code_hash", device_code_hash, for_update
        )

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The newest grant with this user code (``for_update``: locked until the unit of
        work ends)."""
        return await self._find(Q.DEVICE_GRANT_BY_USER_CODE, "user_code", user_code, for_update)

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The grant that issued this access token (``for_update``: locked until the unit
        of work ends)."""
        return await self._find(
            Q.DEVICE_GRANT_BY_ACCESS_TOKEN, "access_token_hash", access_token_hash, for_update
        )

    async def update(self, grant: DeviceGrant) -> None:
        """Store a changed grant."""
        changed = await self._db.execute(
            Q.DEVICE_GRANT_UPDATE, rows.device_grant_params(grant, self._codec)
        )
        _require(changed == 1, "update of a missing device_grants row")
