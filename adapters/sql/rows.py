"""Domain records to query parameters and back, for every dialect.

A ``Codec`` says how one driver wants uuids, instants, JSON and text lists, and how it gives
them back; everything else (column names, nested values, optional fields) is shared. The
``*_from_row`` functions are the named constructors of the domain records from rows: each
field is read by name and converted explicitly, never ``Cls(**row)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import attrs

from strongroom.adapters.sql.location_rows import (
    destination_from_json,
    destination_to_json,
    drill_from_json,
    drill_to_json,
    source_from_json,
    source_to_json,
)
from strongroom.adapters.wire import render
from strongroom.domain.audit import AuditEvent, Change, JsonValue, Outcome
from strongroom.domain.backups import (
    Backup,
    BackupKind,
    BackupState,
    Destination,
    Freshness,
    RetentionPolicy,
    Schedule,
)
from strongroom.domain.billing import BillingState
from strongroom.domain.durations import Duration
from strongroom.domain.encryption import Encryption
from strongroom.domain.invitations import Invitation
from strongroom.domain.keep_rules import KeepRules
from strongroom.domain.names import email_key, name_key
from strongroom.domain.pagination import Cursor
from strongroom.domain.permissions import BUILTIN_ROLES, Permission, Role
from strongroom.domain.principals import Actor, PrincipalType, Session
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.users import User
from strongroom.domain.workspaces import Member, Membership, MemberWorkspace, Workspace
from strongroom.ports.driven.repositories import (
    CountedWorkspace,
    IdempotencyRecord,
    SessionGrant,
)

Params = dict[str, object]


class Row(Protocol):
    """A result row whose columns are read by name (``sqlite3.Row``, a psycopg dict row)."""

    def __getitem__(self, key: str) -> Any: ...

    def keys(self) -> Iterable[str]: ...


class Codec(Protocol):
    """How one driver takes and gives the values that differ between dialects."""

    def uuid(self, value: UUID) -> object:
        """A uuid parameter."""
        ...

    def timestamp(self, value: datetime) -> object:
        """An instant parameter (aware datetimes only)."""
        ...

    def json(self, value: object) -> object:
        """A JSON parameter (a JSON-compatible value; object key order is kept)."""
        ...

    def text_list(self, value: Sequence[str]) -> object:
        """A list-of-text parameter."""
        ...

    def array(self, value: Sequence[object]) -> object:
        """A list of parameters of this codec (a column of rows written in one statement)."""
        ...

    def read_uuid(self, value: Any) -> UUID:
        """A uuid column."""
        ...

    def read_timestamp(self, value: Any) -> datetime:
        """An instant column, in UTC."""
        ...

    def read_json(self, value: Any) -> Any:
        """A JSON column."""
        ...

    def read_text_list(self, value: Any) -> list[str]:
        """A list-of-text column."""
        ...


def opt_uuid(codec: Codec, value: UUID | None) -> object:
    return None if value is None else codec.uuid(value)


def opt_timestamp(codec: Codec, value: datetime | None) -> object:
    return None if value is None else codec.timestamp(value)


def read_opt_uuid(codec: Codec, value: Any) -> UUID | None:
    return None if value is None else codec.read_uuid(value)


def read_opt_timestamp(codec: Codec, value: Any) -> datetime | None:
    return None if value is None else codec.read_timestamp(value)


# Workspaces and memberships.


def workspace_params(workspace: Workspace, codec: Codec) -> Params:
    """The columns of a workspace."""
    overrides = {resource.value: limit for resource, limit in workspace.quota_overrides.items()}
    return {
        "id": codec.uuid(workspace.id),
        "name": workspace.name,
        "idp_org_id": workspace.idp_org_id,
        "customer_id": workspace.customer_id,
        "storage_namespace": workspace.storage_namespace,
        "created_by": codec.uuid(workspace.created_by),
        "billing_state": workspace.billing_state.value,
        "quota_overrides": codec.json(overrides),
        "created_at": codec.timestamp(workspace.created_at),
        "updated_at": codec.timestamp(workspace.updated_at),
    }


def workspace_from_row(row: Row, codec: Codec) -> Workspace:
    """A workspace from its columns."""
    overrides = codec.read_json(row["quota_overrides"])
    return Workspace(
        id=codec.read_uuid(row["id"]),
        name=row["name"],
        idp_org_id=row["idp_org_id"],
        customer_id=row["customer_id"],
        storage_namespace=row["storage_namespace"],
        created_by=codec.read_uuid(row["created_by"]),
        billing_state=BillingState(row["billing_state"]),
        created_at=codec.read_timestamp(row["created_at"]),
        updated_at=codec.read_timestamp(row["updated_at"]),
        quota_overrides={QuotaResource(key): int(limit) for key, limit in overrides.items()},
    )


_WORKSPACE_COLUMNS = (
    "id",
    "name",
    "idp_org_id",
    "customer_id",
    "storage_namespace",
    "created_by",
    "billing_state",
    "quota_overrides",
    "created_at",
    "updated_at",
)
_WORKSPACES_KEPT = 4096
# Decoded workspaces by their columns' values (see ``counted_workspace_from_row``).
_workspaces: dict[tuple[object, ...], Workspace] = {}


def counted_workspace_from_row(row: Row, codec: Codec) -> CountedWorkspace:
    """A workspace and its backup count (``backup_count``) from its columns. Each create
    reads its workspace: it is decoded once per distinct set of column values (a frozen
    value of every column, ``updated_at`` included), so nothing is kept but the decoding."""
    values = [row[name] for name in _WORKSPACE_COLUMNS]
    overrides = values[7]
    if isinstance(overrides, dict):  # PostgreSQL parses jsonb; SQLite keeps the text
        values[7] = tuple(sorted(overrides.items()))
    key = (type(codec), *values)
    workspace = _workspaces.get(key)
    if workspace is None:
        workspace = workspace_from_row(row, codec)
        if len(_workspaces) >= _WORKSPACES_KEPT:
            _workspaces.clear()
        _workspaces[key] = workspace
    return CountedWorkspace(workspace, int(row["backup_count"]))


def membership_params(membership: Membership, codec: Codec) -> Params:
    """The columns of a membership (the workspace's creation time is copied by the query)."""
    return {
        "workspace_id": codec.uuid(membership.workspace_id),
        "user_id": codec.uuid(membership.user_id),
        "role": membership.role,
        "joined_at": codec.timestamp(membership.joined_at),
    }


def membership_from_row(row: Row, codec: Codec) -> Membership:
    """A membership from its columns."""
    return Membership(
        workspace_id=codec.read_uuid(row["workspace_id"]),
        user_id=codec.read_uuid(row["user_id"]),
        role=row["role"],
        joined_at=codec.read_timestamp(row["joined_at"]),
    )


def member_from_row(row: Row, codec: Codec) -> Member:
    """A member of a workspace with their person's email and name."""
    return Member(
        user_id=codec.read_uuid(row["user_id"]),
        email=row["email"],
        name=row["name"],
        role=row["role"],
        joined_at=codec.read_timestamp(row["joined_at"]),
    )


def member_workspace_from_row(row: Row, codec: Codec) -> MemberWorkspace:
    """A workspace with the listing person's role (``member_role``)."""
    return MemberWorkspace(workspace_from_row(row, codec), row["member_role"])


# People and sessions.


def user_params(user: User, codec: Codec) -> Params:
    """The columns of a person."""
    return {
        "id": codec.uuid(user.id),
        "email": user.email,
        "name": user.name,
        "idp_subject": user.idp_subject,
        "created_at": codec.timestamp(user.created_at),
    }


def user_from_row(row: Row, codec: Codec) -> User:
    """A person from their columns."""
    return User(
        id=codec.read_uuid(row["id"]),
        email=row["email"],
        name=row["name"],
        idp_subject=row["idp_subject"],
        created_at=codec.read_timestamp(row["created_at"]),
    )


def session_params(session: Session, codec: Codec) -> Params:
    """The columns of a session."""
    return {
        "id": codec.uuid(session.id),
        "token_hash": session.token_hash,
        "user_id": codec.uuid(session.user_id),
        "workspace_id": opt_uuid(codec, session.workspace_id),
        "created_at": codec.timestamp(session.created_at),
        "expires_at": codec.timestamp(session.expires_at),
        "revoked_at": opt_timestamp(codec, session.revoked_at),
    }


def session_grant_from_row(row: Row, codec: Codec) -> SessionGrant:
    """A session, its person (``user_*``) and their role (``role_*``) from one joined row.

    Built-in roles are the domain's constants; a custom role comes from the roles table.
    """
    user_id = codec.read_uuid(row["user_id"])
    session = Session(
        id=codec.read_uuid(row["id"]),
        token_hash=row["token_hash"],
        user_id=user_id,
        workspace_id=read_opt_uuid(codec, row["workspace_id"]),
        created_at=codec.read_timestamp(row["created_at"]),
        expires_at=codec.read_timestamp(row["expires_at"]),
        revoked_at=read_opt_timestamp(codec, row["revoked_at"]),
    )
    user = User(
        id=user_id,
        email=row["user_email"],
        name=row["user_name"],
        idp_subject=row["user_idp_subject"],
        created_at=codec.read_timestamp(row["user_created_at"]),
    )
    role: Role | None = None
    slug = row["role_slug"]
    if slug is not None:
        role = BUILTIN_ROLES.get(slug)
        if role is None and row["role_name"] is not None:
            role = _custom_role(slug, row["role_name"], row["role_permissions"], codec)
    return SessionGrant(session, user, role)


# Custom roles and workers.


def role_params(workspace_id: UUID, role: Role, codec: Codec) -> Params:
    """The columns of a workspace's custom role (permissions in catalog order)."""
    ordered = [permission.value for permission in Permission if permission in role.permissions]
    return {
        "workspace_id": codec.uuid(workspace_id),
        "slug": role.slug,
        "name": role.name,
        "permissions": codec.text_list(ordered),
    }


def role_from_row(row: Row, codec: Codec) -> Role:
    """A custom role from its columns."""
    return _custom_role(row["slug"], row["name"], row["permissions"], codec)


def _custom_role(slug: str, name: str, permissions: Any, codec: Codec) -> Role:
    # A permission dropped from the catalog since the role was saved grants nothing.
    known = Permission._value2member_map_
    held = frozenset(
        Permission(held) for held in codec.read_text_list(permissions) if held in known
    )
    return Role(slug=slug, name=name, permissions=held, builtin=False)


def read_permissions(value: Any, codec: Codec) -> frozenset[Permission]:
    # A permission dropped from the catalog since the record was saved grants nothing.
    known = Permission._value2member_map_
    return frozenset(Permission(held) for held in codec.read_text_list(value) if held in known)


def invitation_params(invitation: Invitation, codec: Codec) -> Params:
    """The columns of an invitation."""
    return {
        "id": codec.uuid(invitation.id),
        "workspace_id": codec.uuid(invitation.workspace_id),
        "email": invitation.email,
        "email_key": email_key(invitation.email),
        "role": invitation.role,
        "created_at": codec.timestamp(invitation.created_at),
        "expires_at": codec.timestamp(invitation.expires_at),
        "accepted_at": opt_timestamp(codec, invitation.accepted_at),
    }


def invitation_from_row(row: Row, codec: Codec) -> Invitation:
    """An invitation from its columns."""
    return Invitation(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        email=row["email"],
        role=row["role"],
        created_at=codec.read_timestamp(row["created_at"]),
        expires_at=codec.read_timestamp(row["expires_at"]),
        accepted_at=read_opt_timestamp(codec, row["accepted_at"]),
    )


# Backups.


def backup_params(backup: Backup, codec: Codec) -> Params:
    """The columns of a backup: nested values as JSON, retention as two second counts."""
    schedule, retention = backup.schedule, backup.retention
    return {
        "id": codec.uuid(backup.id),
        "workspace_id": codec.uuid(backup.workspace_id),
        "name": backup.name,
        "name_key": name_key(backup.name),
        "kind": backup.kind.value,
        "state": backup.state.value,
        "paused": backup.paused,
        "source": None if backup.source is None else codec.json(source_to_json(backup.source)),
        "sealed_credentials": backup.sealed_credentials,
        "schedule_cron": None if schedule is None else schedule.cron,
        "schedule_timezone": None if schedule is None else schedule.timezone,
        "worker_id": opt_uuid(codec, backup.worker_id),
        "retention_expire_after_seconds": None
        if retention is None
        else (retention.expire_after.seconds),
        "retention_lock_for_seconds": None if retention is None else retention.lock_for.seconds,
        "retention_keep": None
        if retention is None or retention.keep is None
        else codec.json(attrs.asdict(retention.keep)),
        "destination": _destination_param(backup.destination, codec),
        "sealed_destination_credentials": backup.sealed_destination_credentials,
        "next_run_at": opt_timestamp(codec, backup.next_run_at),
        "created_at": codec.timestamp(backup.created_at),
        "updated_at": codec.timestamp(backup.updated_at),
        "body": backup_body(backup),
        "encryption": None
        if backup.encryption is None
        else codec.json(list(backup.encryption.recipients)),
        "freshness_max_age_seconds": None
        if backup.freshness is None
        else backup.freshness.max_age.seconds,
        "drill": None if backup.drill is None else codec.json(drill_to_json(backup.drill)),
        "next_drill_at": opt_timestamp(codec, backup.next_drill_at),
    }


_DESTINATIONS_KEPT = 1024
# A destination's parameter by its value: a few of them serve most backups
# ({"type": "service"} above all), and each create writes one.
_destinations: dict[tuple[object, Destination], object] = {}


def _destination_param(destination: Destination, codec: Codec) -> object:
    key = (type(codec), destination)
    try:
        found = _destinations.get(key)
    except TypeError:  # an unhashable value inside: not cached
        return codec.json(destination_to_json(destination))
    if found is None:
        found = codec.json(destination_to_json(destination))
        if len(_destinations) >= _DESTINATIONS_KEPT:
            _destinations.clear()
        _destinations[key] = found
    return found


def backup_body(backup: Backup) -> str:
    """What a backup's row stores as ``body``: its API JSON, from the one presenter
    (``GET /v1/backups/{id}`` answers it as it is). The only use of the wire presenter
    by the stores: a move of the presenter changes this import alone."""
    return render(backup).decode()


def page_json(row: Row, codec: Codec) -> bytes:
    """The list envelope of a page whose items the database rendered (``items``: their JSON
    texts joined by commas, or NULL) around them, with the cursor of ``next_created_at``
    and ``next_id`` (NULL on the last page), as ``wire.listing`` writes it."""
    items, next_id = row["items"], row["next_id"]
    cursor = (
        "null"
        if next_id is None
        else '"'
        + Cursor(codec.read_timestamp(row["next_created_at"]), codec.read_uuid(next_id)).encode()
        + '"'
    )
    return f'{{"data":[{items or ""}],"next_cursor":{cursor}}}'.encode()


def backup_from_row(row: Row, codec: Codec) -> Backup:
    """A backup from its columns."""
    source = row["source"]
    cron = row["schedule_cron"]
    expire_after, keep = row["retention_expire_after_seconds"], row["retention_keep"]
    max_age = row["freshness_max_age_seconds"]
    return Backup(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        name=row["name"],
        kind=BackupKind(row["kind"]),
        state=BackupState(row["state"]),
        paused=bool(row["paused"]),
        created_at=codec.read_timestamp(row["created_at"]),
        updated_at=codec.read_timestamp(row["updated_at"]),
        source=None if source is None else source_from_json(codec.read_json(source)),
        sealed_credentials=read_opt_bytes(row["sealed_credentials"]),
        schedule=None if cron is None else Schedule(cron, row["schedule_timezone"]),
        worker_id=read_opt_uuid(codec, row["worker_id"]),
        retention=None
        if expire_after is None
        else RetentionPolicy(
            Duration(expire_after),
            Duration(row["retention_lock_for_seconds"]),
            None if keep is None else KeepRules(**codec.read_json(keep)),
        ),
        destination=destination_from_json(codec.read_json(row["destination"])),
        sealed_destination_credentials=read_opt_bytes(row["sealed_destination_credentials"]),
        next_run_at=read_opt_timestamp(codec, row["next_run_at"]),
        encryption=None
        if row["encryption"] is None
        else Encryption(codec.read_json(row["encryption"])),
        freshness=None if max_age is None else Freshness(Duration(max_age)),
        drill=None if row["drill"] is None else drill_from_json(codec.read_json(row["drill"])),
        next_drill_at=read_opt_timestamp(codec, row["next_drill_at"]),
    )


def read_opt_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


# The audit trail.


def columns(rows: Sequence[Params], codec: Codec) -> Params:
    """Rows' parameters as one array per column, for a statement that writes them all."""
    return {name: codec.array([row[name] for row in rows]) for name in rows[0]}


def audit_params(event: AuditEvent, codec: Codec) -> Params:
    """The columns of an audit event; ``changes`` keeps its field order."""
    changes: JsonValue = (
        None
        if event.changes is None
        else {
            field: {"before": change.before, "after": change.after}
            for field, change in event.changes.items()
        }
    )
    return {
        "id": codec.uuid(event.id),
        "workspace_id": codec.uuid(event.workspace_id),
        "occurred_at": codec.timestamp(event.occurred_at),
        "actor_type": event.actor.type.value,
        "actor_id": opt_uuid(codec, event.actor.id),
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "request_id": event.request_id,
        "outcome": event.outcome.value,
        "changes": None if changes is None else codec.json(changes),
    }


def audit_from_row(row: Row, codec: Codec) -> AuditEvent:
    """An audit event from its columns."""
    changes = row["changes"]
    return AuditEvent(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        occurred_at=codec.read_timestamp(row["occurred_at"]),
        actor=Actor(PrincipalType(row["actor_type"]), read_opt_uuid(codec, row["actor_id"])),
        action=row["action"],
        target_type=row["target_type"],
        target_id=row["target_id"],
        request_id=row["request_id"],
        outcome=Outcome(row["outcome"]),
        changes=None
        if changes is None
        else {
            field: Change(before=change["before"], after=change["after"])
            for field, change in codec.read_json(changes).items()
        },
    )


# Idempotency keys.


def idempotency_params(record: IdempotencyRecord, codec: Codec) -> Params:
    """The columns of a reserved Idempotency-Key."""
    return {
        "scope": record.scope,
        "idempotency_key": record.key,
        "fingerprint": record.fingerprint,
        "created_at": codec.timestamp(record.created_at),
        "body": record.body,
    }


def idempotency_from_row(row: Row, codec: Codec) -> IdempotencyRecord:
    """A reserved Idempotency-Key from its columns."""
    return IdempotencyRecord(
        scope=row["scope"],
        key=row["idempotency_key"],
        fingerprint=row["fingerprint"],
        created_at=codec.read_timestamp(row["created_at"]),
        body=row["body"],
    )


# The built-in identity provider.
