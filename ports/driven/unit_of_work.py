"""The unit of work: one transaction around one use case; it rolls back unless committed.

It collects the audit events of the changes made in it (``collect``) and writes them in
the transaction it commits (cosmicpython's ``collect_new_events``, with the events written
rather than dispatched): a change never commits unaudited, and an event never outlives a
rolled-back change."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol, Self

from strongroom.domain.audit import AuditEvent
from strongroom.ports.driven.assurance_repositories import HealthRepository, WebhookRepository
from strongroom.ports.driven.backup_repositories import (
    ArtifactRepository,
    BackupRepository,
    RestoreRepository,
    RunRepository,
)
from strongroom.ports.driven.credential_repositories import (
    AccountRepository,
    ApiKeyRepository,
    DeviceGrantRepository,
    WorkerRepository,
)
from strongroom.ports.driven.drills import DrillRepository
from strongroom.ports.driven.repositories import (
    AuditRepository,
    IdempotencyRepository,
    InvitationRepository,
    MembershipRepository,
    RoleRepository,
    SessionRepository,
    UserRepository,
    WorkspaceRepository,
)
from strongroom.ports.driven.retention_repositories import RetentionRepository
from strongroom.ports.driven.statistics import StatisticsRepository


class UnitOfWork(Protocol):
    """Repositories that share one transaction.

    Use as an async context manager; leaving it without ``commit()`` rolls every change back.
    """

    workspaces: WorkspaceRepository
    memberships: MembershipRepository
    users: UserRepository
    sessions: SessionRepository
    backups: BackupRepository
    runs: RunRepository
    artifacts: ArtifactRepository
    restores: RestoreRepository
    drills: DrillRepository
    workers: WorkerRepository
    api_keys: ApiKeyRepository
    invitations: InvitationRepository
    roles: RoleRepository
    audit: AuditRepository
    idempotency: IdempotencyRepository
    accounts: AccountRepository
    device_grants: DeviceGrantRepository
    statistics: StatisticsRepository
    retention: RetentionRepository
    health: HealthRepository
    webhooks: WebhookRepository

    async def __aenter__(self) -> Self:
        """Begin the transaction."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Roll back whatever was not committed and release the transaction."""
        ...

    def collect(self, event: AuditEvent) -> None:
        """Keep ``event`` for the next ``commit``, which writes it in its transaction (in
        the order collected); leaving the unit without committing drops it."""
        ...

    async def commit(self) -> None:
        """Write the collected events and make the changes durable, together."""
        ...

    async def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` when the store does not answer (readiness)."""
        ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
