"""The SQL unit of work, shared by SQLite and PostgreSQL: repositories over one transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from strongroom.adapters.sql.repositories import (
    SqlAccountRepository,
    SqlApiKeyRepository,
    SqlArtifactRepository,
    SqlAuditRepository,
    SqlBackupRepository,
    SqlDeviceGrantRepository,
    SqlIdempotencyRepository,
    SqlInvitationRepository,
    SqlMembershipRepository,
    SqlRoleRepository,
    SqlRunRepository,
    SqlSessionRepository,
    SqlUserRepository,
    SqlWorkerRepository,
    SqlWorkspaceRepository,
    Statements,
)
from strongroom.ports.driven import repositories as ports

if TYPE_CHECKING:
    from strongroom.ports.driven.unit_of_work import UnitOfWork


class Transaction(Statements, Protocol):
    """One unit of work's connection and transaction, in one dialect."""

    def commit(self) -> None:
        """Commit what was written so far (later writes open a new transaction)."""
        ...

    def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` unless the database answers."""
        ...

    def close(self) -> None:
        """Roll back whatever was not committed and give the connection back."""
        ...


class OneUnitPerThread:
    """Refuses a unit of work opened inside another on the same thread, as the in-memory
    adapter does: against a real database the inner one would wait for the outer one's
    locks until a timeout."""

    def __init__(self) -> None:
        self._local = threading.local()

    def enter(self) -> None:
        """Mark this thread as inside a unit of work."""
        if getattr(self._local, "active", False):
            raise RuntimeError("a unit of work is already open on this thread")
        self._local.active = True

    def leave(self) -> None:
        """Mark this thread as outside any unit of work."""
        self._local.active = False


class SqlUnitOfWork:
    """Repositories over one transaction; rolled back unless committed.

    No connection is taken until the first statement, and no transaction is opened until
    the first statement that writes or locks.
    """

    workspaces: ports.WorkspaceRepository
    memberships: ports.MembershipRepository
    users: ports.UserRepository
    sessions: ports.SessionRepository
    backups: ports.BackupRepository
    runs: ports.RunRepository
    artifacts: ports.ArtifactRepository
    workers: ports.WorkerRepository
    api_keys: ports.ApiKeyRepository
    invitations: ports.InvitationRepository
    roles: ports.RoleRepository
    audit: ports.AuditRepository
    idempotency: ports.IdempotencyRepository
    accounts: ports.AccountRepository
    device_grants: ports.DeviceGrantRepository

    def __init__(self, begin: Callable[[], Transaction], guard: OneUnitPerThread) -> None:
        self._begin = begin
        self._guard = guard
        self._tx: Transaction | None = None

    def __enter__(self) -> Self:
        self._guard.enter()
        try:
            tx = self._tx = self._begin()
        except BaseException:
            self._guard.leave()
            raise
        self.workspaces = SqlWorkspaceRepository(tx)
        self.memberships = SqlMembershipRepository(tx)
        self.users = SqlUserRepository(tx)
        self.sessions = SqlSessionRepository(tx)
        self.backups = SqlBackupRepository(tx)
        self.runs = SqlRunRepository(tx)
        self.artifacts = SqlArtifactRepository(tx)
        self.workers = SqlWorkerRepository(tx)
        self.api_keys = SqlApiKeyRepository(tx)
        self.invitations = SqlInvitationRepository(tx)
        self.roles = SqlRoleRepository(tx)
        self.audit = SqlAuditRepository(tx)
        self.idempotency = SqlIdempotencyRepository(tx)
        self.accounts = SqlAccountRepository(tx)
        self.device_grants = SqlDeviceGrantRepository(tx)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._tx is None:
            raise RuntimeError("exit of a unit of work that was not entered")
        try:
            self._tx.close()
        finally:
            self._tx = None
            self._guard.leave()

    def commit(self) -> None:
        """Make this unit's changes durable and visible to every later one."""
        if self._tx is None:
            raise RuntimeError("commit outside a unit of work")
        self._tx.commit()

    def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` when the database does not answer."""
        if self._tx is None:
            raise RuntimeError("ping outside a unit of work")
        self._tx.ping()


if TYPE_CHECKING:

    def _is_a_unit_of_work(uow: SqlUnitOfWork) -> UnitOfWork:
        """Never called: makes mypy check that ``SqlUnitOfWork`` meets the port."""
        return uow
