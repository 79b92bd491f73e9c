"""The in-memory unit of work."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Self

from strongroom.adapters.memory import assurance_repositories as assurance_repos
from strongroom.adapters.memory import backup_repositories as backup_repos
from strongroom.adapters.memory import credential_repositories as credential_repos
from strongroom.adapters.memory import record_repositories as record_repos
from strongroom.adapters.memory import repositories as repos
from strongroom.adapters.memory.drill_repositories import MemoryDrillRepository
from strongroom.adapters.memory.retention_repositories import MemoryRetentionRepository
from strongroom.adapters.memory.statistics import MemoryStatisticsRepository
from strongroom.adapters.memory.store import MemoryStore, Transaction
from strongroom.domain.audit import AuditEvent
from strongroom.ports.driven import assurance_repositories as assurance_ports
from strongroom.ports.driven import backup_repositories as backup_ports
from strongroom.ports.driven import credential_repositories as credential_ports
from strongroom.ports.driven import repositories as ports
from strongroom.ports.driven.drills import DrillRepository
from strongroom.ports.driven.retention_repositories import RetentionRepository
from strongroom.ports.driven.statistics import StatisticsRepository


class MemoryUnitOfWork:
    """One serialisable transaction on a ``MemoryStore``; rolled back unless committed."""

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

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._context: AbstractAsyncContextManager[Transaction] | None = None
        self._tx: Transaction | None = None
        self._events: list[AuditEvent] = []

    async def __aenter__(self) -> Self:
        self._context = self._store.transaction()
        tx = self._tx = await self._context.__aenter__()
        self.workspaces = repos.MemoryWorkspaceRepository(tx)
        self.memberships = repos.MemoryMembershipRepository(tx)
        self.users = repos.MemoryUserRepository(tx)
        self.sessions = repos.MemorySessionRepository(tx)
        self.backups = backup_repos.MemoryBackupRepository(tx)
        self.runs = backup_repos.MemoryRunRepository(tx)
        self.artifacts = backup_repos.MemoryArtifactRepository(tx)
        self.restores = backup_repos.MemoryRestoreRepository(tx)
        self.drills = MemoryDrillRepository(tx)
        self.workers = credential_repos.MemoryWorkerRepository(tx)
        self.api_keys = credential_repos.MemoryApiKeyRepository(tx)
        self.invitations = repos.MemoryInvitationRepository(tx)
        self.roles = repos.MemoryRoleRepository(tx)
        self.audit = record_repos.MemoryAuditRepository(tx)
        self.idempotency = record_repos.MemoryIdempotencyRepository(tx)
        self.accounts = credential_repos.MemoryAccountRepository(tx)
        self.device_grants = credential_repos.MemoryDeviceGrantRepository(tx)
        self.statistics = MemoryStatisticsRepository(tx)
        self.retention = MemoryRetentionRepository(tx)
        self.health = assurance_repos.MemoryHealthRepository(tx)
        self.webhooks = assurance_repos.MemoryWebhookRepository(tx)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._context is None or self._tx is None:
            raise RuntimeError("exit of a unit of work that was not entered")
        self._tx.rollback()
        self._events.clear()
        await self._context.__aexit__(exc_type, exc, traceback)
        self._context = self._tx = None

    def collect(self, event: AuditEvent) -> None:
        """Keep ``event`` for the next ``commit``."""
        if self._tx is None:
            raise RuntimeError("an event collected outside a unit of work")
        self._events.append(event)

    async def commit(self) -> None:
        """Write the collected events, and make this unit's changes visible to every
        later one."""
        if self._tx is None:
            raise RuntimeError("commit outside a unit of work")
        events, self._events = self._events, []
        for event in events:
            await self.audit.add(event)
        self._tx.commit()

    async def ping(self) -> None:
        """The in-memory store always answers."""


def memory_uow_factory(store: MemoryStore) -> MemoryUnitOfWork:
    """A unit of work on ``store`` (partially apply for a ``UnitOfWorkFactory``)."""
    return MemoryUnitOfWork(store)
