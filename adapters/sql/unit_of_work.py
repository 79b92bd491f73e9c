"""The SQL unit of work, shared by SQLite and PostgreSQL: repositories over one transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.assurance_repositories import (
    SqlHealthRepository,
    SqlWebhookRepository,
)
from strongroom.adapters.sql.backup_repositories import (
    SqlArtifactRepository,
    SqlBackupRepository,
    SqlRestoreRepository,
    SqlRunRepository,
)
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.credential_repositories import (
    SqlAccountRepository,
    SqlApiKeyRepository,
    SqlDeviceGrantRepository,
    SqlWorkerRepository,
)
from strongroom.adapters.sql.drill_repositories import SqlDrillRepository
from strongroom.adapters.sql.record_repositories import (
    SqlAuditRepository,
    SqlIdempotencyRepository,
)
from strongroom.adapters.sql.repositories import (
    SqlInvitationRepository,
    SqlMembershipRepository,
    SqlRoleRepository,
    SqlSessionRepository,
    SqlUserRepository,
    SqlWorkspaceRepository,
)
from strongroom.adapters.sql.retention_repositories import SqlRetentionRepository
from strongroom.adapters.sql.statements import Statements, Step
from strongroom.adapters.sql.statistics import SqlStatisticsRepository
from strongroom.domain.audit import AuditEvent
from strongroom.ports.driven import assurance_repositories as assurance_ports
from strongroom.ports.driven import backup_repositories as backup_ports
from strongroom.ports.driven import credential_repositories as credential_ports
from strongroom.ports.driven import repositories as ports
from strongroom.ports.driven.drills import DrillRepository
from strongroom.ports.driven.retention_repositories import RetentionRepository
from strongroom.ports.driven.statistics import PoolUse, StatisticsRepository

if TYPE_CHECKING:
    from strongroom.ports.driven.unit_of_work import UnitOfWork


class Transaction(Statements, Protocol):
    """One unit of work's connection and transaction, in one dialect."""

    async def commit(self, steps: Sequence[Step] = ()) -> None:
        """Commit what was written so far, ``steps`` first (PostgreSQL sends them with the
        ``COMMIT``, in one round trip); later writes open a new transaction."""
        ...

    async def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` unless the database answers."""
        ...

    async def pool_use(self) -> PoolUse | None:
        """How this process's connection pool is used (``None`` without a pool)."""
        ...

    async def close(self) -> None:
        """Roll back whatever was not committed and give the connection back."""
        ...


class OneUnitPerTask:
    """Refuses a unit of work opened inside another in the same task, as the in-memory
    adapter does: against a real database the inner one would wait for the outer one's
    locks until a timeout.

    Tasks started inside a unit inherit the mark (they copy the context), so they cannot
    open units of their own either.
    """

    def __init__(self) -> None:
        self._active: ContextVar[bool] = ContextVar("strongroom_sql_unit_open", default=False)

    def enter(self) -> None:
        """Mark this task as inside a unit of work."""
        if self._active.get():
            raise RuntimeError("a unit of work is already open in this task")
        self._active.set(True)

    def leave(self) -> None:
        """Mark this task as outside any unit of work."""
        # Not ``reset(token)``: a blocking view enters and leaves in two different tasks,
        # and a token only resets in the context that made it.
        self._active.set(False)


class SqlUnitOfWork:
    """Repositories over one transaction; rolled back unless committed (``async with``).

    No connection is taken until the first statement, and no transaction is opened until
    the first statement that writes or locks.
    """

    workspaces: ports.WorkspaceRepository
    memberships: ports.MembershipRepository
    users: ports.UserRepository
    sessions: ports.SessionRepository
    backups: backup_ports.BackupRepository
    runs: backup_ports.RunRepository
    artifacts: backup_ports.ArtifactRepository
    restores: backup_ports.RestoreRepository
    drills: DrillRepository
    workers: credential_ports.WorkerRepository
    api_keys: credential_ports.ApiKeyRepository
    invitations: ports.InvitationRepository
    roles: ports.RoleRepository
    audit: ports.AuditRepository
    idempotency: ports.IdempotencyRepository
    accounts: credential_ports.AccountRepository
    device_grants: credential_ports.DeviceGrantRepository
    statistics: StatisticsRepository
    retention: RetentionRepository
    health: assurance_ports.HealthRepository
    webhooks: assurance_ports.WebhookRepository

    def __init__(self, begin: Callable[[], Transaction], guard: OneUnitPerTask) -> None:
        # Repositories are built on first use (``__getattr__``): most units use one or two.
        self._begin = begin
        self._guard = guard
        self._tx: Transaction | None = None
        # The transaction the repositories use (kept after the unit ends, as they were).
        self._entered: Transaction | None = None
        self._events: list[AuditEvent] = []

    async def __aenter__(self) -> Self:
        self._guard.enter()
        try:
            self._tx = self._entered = self._begin()
        except BaseException:
            self._guard.leave()
            raise
        return self

    def __getattr__(self, name: str) -> object:
        """A repository of this unit, built the first time it is asked for."""
        build = _REPOSITORIES.get(name)
        tx = self.__dict__.get("_entered")
        if build is None or tx is None:
            raise AttributeError(name)
        repository = self.__dict__[name] = build(tx)
        return repository

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._tx is None:
            raise RuntimeError("exit of a unit of work that was not entered")
        self._events.clear()
        try:
            await self._tx.close()
        finally:
            self._tx = None
            self._guard.leave()

    def collect(self, event: AuditEvent) -> None:
        """Keep ``event`` for the next ``commit``."""
        if self._tx is None:
            raise RuntimeError("an event collected outside a unit of work")
        self._events.append(event)

    async def commit(self) -> None:
        """Write the collected events, and make this unit's changes durable and visible
        to every later one."""
        if self._tx is None:
            raise RuntimeError("commit outside a unit of work")
        tx, events, self._events = self._tx, self._events, []
        written = [rows.audit_params(event, tx.codec) for event in events]
        if len(written) > 1:
            await tx.commit([(Q.AUDIT_INSERT_MANY, rows.columns(written, tx.codec), "count")])
            return
        await tx.commit([(Q.AUDIT_INSERT, params, "count") for params in written])

    async def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` when the database does not answer."""
        if self._tx is None:
            raise RuntimeError("ping outside a unit of work")
        await self._tx.ping()


_REPOSITORIES: dict[str, Callable[[Transaction], object]] = {
    "workspaces": SqlWorkspaceRepository,
    "memberships": SqlMembershipRepository,
    "users": SqlUserRepository,
    "sessions": SqlSessionRepository,
    "backups": SqlBackupRepository,
    "runs": SqlRunRepository,
    "artifacts": SqlArtifactRepository,
    "restores": SqlRestoreRepository,
    "drills": SqlDrillRepository,
    "workers": SqlWorkerRepository,
    "api_keys": SqlApiKeyRepository,
    "invitations": SqlInvitationRepository,
    "roles": SqlRoleRepository,
    "audit": SqlAuditRepository,
    "idempotency": SqlIdempotencyRepository,
    "accounts": SqlAccountRepository,
    "device_grants": SqlDeviceGrantRepository,
    "statistics": SqlStatisticsRepository,
    "retention": SqlRetentionRepository,
    "health": SqlHealthRepository,
    "webhooks": SqlWebhookRepository,
}
"""Each repository attribute of a unit and how it is built over the unit's transaction."""


if TYPE_CHECKING:

    def _is_a_unit_of_work(uow: SqlUnitOfWork) -> UnitOfWork:
        """Never called: makes mypy check that ``SqlUnitOfWork`` meets the port."""
        return uow
