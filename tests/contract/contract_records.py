"""Builders of domain records for the repository contract, and the adapters under test.

Every builder gives fresh ids, so tests never collide, and instants with microseconds, so
that a store which rounds them is caught.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import attrs

from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.runtime.blocking import blocking, blocking_call
from strongroom.adapters.sql.repositories import SqlRoleRepository
from strongroom.adapters.sql.unit_of_work import SqlUnitOfWork
from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.artifacts import Artifact
from strongroom.domain.audit import AuditEvent, Change, Outcome
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.invitations import Invitation
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.permissions import Permission, Role
from strongroom.domain.principals import Actor, PrincipalType, Session
from strongroom.domain.restores import Restore
from strongroom.domain.runs import Run
from strongroom.domain.users import User
from strongroom.domain.workspaces import Membership, Workspace
from strongroom.ports.driven.unit_of_work import UnitOfWork

T0 = datetime(2026, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
_counter = itertools.count(1)


def at(seconds: float) -> datetime:
    """``T0`` plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def unique(prefix: str) -> str:
    """A text no other call gives."""
    return f"{prefix}-{next(_counter)}"


def user(created_at: datetime = T0) -> User:
    """A new person."""
    return User(uuid4(), f"{unique('person')}@example.com", "Ada", unique("subject"), created_at)


def workspace(creator: User, created_at: datetime = T0, **changes: Any) -> Workspace:
    """A new workspace created by ``creator``."""
    built = Workspace(
        id=uuid4(),
        name=unique("Workspace"),
        idp_org_id=unique("org"),
        customer_id=unique("cus"),
        storage_namespace=unique("ns"),
        created_by=creator.id,
        billing_state=BillingState.TRIAL,
        created_at=created_at,
        updated_at=created_at,
    )
    return attrs.evolve(built, **changes)


def backup(workspace_id: UUID, name: str | None = None, created_at: datetime = T0) -> Backup:
    """A new manual draft backup."""
    return Backup.draft(
        uuid4(), workspace_id, name or unique("backup"), BackupKind.MANUAL, created_at
    )


def session(user_id: UUID, workspace_id: UUID | None = None, created_at: datetime = T0) -> Session:
    """A new session (its token hash is unique)."""
    return Session(
        uuid4(), unique("hash"), user_id, workspace_id, created_at, created_at + timedelta(days=1)
    )


def audit_event(
    workspace_id: UUID,
    occurred_at: datetime = T0,
    action: str = "backup.create",
    actor: Actor | None = None,
    changes: dict[str, Change] | None = None,
) -> AuditEvent:
    """A new audit event."""
    return AuditEvent(
        id=uuid4(),
        workspace_id=workspace_id,
        occurred_at=occurred_at,
        actor=actor or Actor(PrincipalType.USER, uuid4()),
        action=action,
        target_type=action.partition(".")[0],
        target_id=str(uuid4()),
        request_id=unique("req"),
        outcome=Outcome.SUCCESS,
        changes=changes,
    )


def account(email: str | None = None, created_at: datetime = T0) -> Account:
    """A new local account."""
    return Account(
        uuid4(), email or f"{unique('account')}@example.com", "Ada", "$argon2$x", created_at
    )


def device_grant(created_at: datetime = T0, **changes: Any) -> DeviceGrant:
    """A new pending device grant."""
    built = DeviceGrant(
        id=uuid4(),
        device_code_hash=unique("device"),
        user_code=unique("CODE"),
        client_id="strongroom-cli",
        created_at=created_at,
        expires_at=created_at + timedelta(minutes=10),
        interval=5,
    )
    return attrs.evolve(built, **changes)


def worker(workspace_id: UUID, created_at: datetime = T0, **changes: Any) -> Worker:
    """A new worker (its token hash is unique)."""
    return attrs.evolve(
        Worker(uuid4(), workspace_id, unique("worker"), unique("whash"), created_at), **changes
    )


def api_key(
    workspace_id: UUID,
    created_at: datetime = T0,
    permissions: frozenset[Permission] = frozenset({Permission.BACKUPS_READ}),
    **changes: Any,
) -> ApiKey:
    """A new API key (its token hash is unique)."""
    built = ApiKey(uuid4(), workspace_id, unique("key"), permissions, unique("khash"), created_at)
    return attrs.evolve(built, **changes)


def invitation(
    workspace_id: UUID, created_at: datetime = T0, email: str | None = None, **changes: Any
) -> Invitation:
    """A new pending invitation, valid for seven days."""
    built = Invitation(
        uuid4(),
        workspace_id,
        email or f"{unique('invitee')}@example.com",
        "viewer",
        created_at,
        created_at + timedelta(days=7),
    )
    return attrs.evolve(built, **changes)


class Adapter:
    """One implementation of the repository ports under test."""

    name: str

    def async_uow(self) -> UnitOfWork:
        """A new unit of work, as the use cases get it (``async with``)."""
        raise NotImplementedError

    def uow(self) -> Any:
        """A new unit of work behind a blocking view: ``with`` and plain calls."""
        return blocking(self.async_uow())

    def add_worker(self, workspace_id: UUID, worker_id: UUID) -> None:
        """Seed a worker with this id."""
        self.store(worker(workspace_id, id=worker_id))

    def add_role(self, workspace_id: UUID, role: Role) -> None:
        """Seed a custom role (the ports cannot create roles yet)."""
        raise NotImplementedError

    def store(self, *records: object) -> None:
        """Add people, workspaces, memberships, backups... in one committed unit of work."""
        with self.uow() as uow:
            for record in records:
                _ADDERS[type(record)](uow, record)
            uow.commit()


_ADDERS: dict[type, Callable[[Any, Any], None]] = {
    User: lambda uow, record: uow.users.add(record),
    Workspace: lambda uow, record: uow.workspaces.add(record),
    Membership: lambda uow, record: uow.memberships.add(record),
    Backup: lambda uow, record: uow.backups.add(record),
    Run: lambda uow, record: uow.runs.add(record),
    Artifact: lambda uow, record: uow.artifacts.add(record),
    Session: lambda uow, record: uow.sessions.add(record),
    AuditEvent: lambda uow, record: uow.audit.add(record),
    Account: lambda uow, record: uow.accounts.add(record),
    DeviceGrant: lambda uow, record: uow.device_grants.add(record),
    Worker: lambda uow, record: uow.workers.add(record),
    ApiKey: lambda uow, record: uow.api_keys.add(record),
    Invitation: lambda uow, record: uow.invitations.add(record),
    Restore: lambda uow, record: uow.restores.add(record),
}


class MemoryAdapter(Adapter):
    """The in-memory reference adapter."""

    name = "memory"

    def __init__(self) -> None:
        self._store = MemoryStore()

    def async_uow(self) -> UnitOfWork:
        return MemoryUnitOfWork(self._store)

    def add_role(self, workspace_id: UUID, role: Role) -> None:
        async def add() -> None:
            async with self._store.transaction() as tx:
                tx.write("roles")[(workspace_id, role.slug)] = role
                tx.commit()

        blocking_call(add())


class SqlAdapter(Adapter):
    """A SQL database, through its unit-of-work factory."""

    def __init__(self, name: str, uow: Callable[[], SqlUnitOfWork]) -> None:
        self.name = name
        self._uow = uow

    def async_uow(self) -> UnitOfWork:
        return self._uow()

    def add_role(self, workspace_id: UUID, role: Role) -> None:
        with blocking(self._uow()) as uow:
            roles = uow.roles
            assert isinstance(roles, SqlRoleRepository)
            roles.add(workspace_id, role)
            uow.commit()
