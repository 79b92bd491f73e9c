"""The driving port: the one application service that HTTP, CLI, worker and embedders call."""

from __future__ import annotations

import asyncio
from datetime import datetime

from strongroom.domain.permissions import DESCRIPTIONS, Permission
from strongroom.ports.driven.identity import IdentityProvider
from strongroom.ports.driven.statistics import ServiceStatistics
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driving.access import Access
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.audit_trail import AuditTrail
from strongroom.ports.driving.backups import Backups
from strongroom.ports.driving.claims import Claims
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.drills import Drills
from strongroom.ports.driving.executions import ServiceRuns
from strongroom.ports.driving.health import HealthBoard
from strongroom.ports.driving.holds import Holds
from strongroom.ports.driving.invitations import Invitations
from strongroom.ports.driving.leases import Leases
from strongroom.ports.driving.machines import ApiKeys, Workers
from strongroom.ports.driving.members import Members, Roles
from strongroom.ports.driving.monitoring import metrics_snapshot
from strongroom.ports.driving.proofs import Proofs
from strongroom.ports.driving.restores import Restores
from strongroom.ports.driving.retention import Retention
from strongroom.ports.driving.runs import Runs
from strongroom.ports.driving.scheduling import Scheduler
from strongroom.ports.driving.sessions import Sessions
from strongroom.ports.driving.transfers import Transfers
from strongroom.ports.driving.verification import ArtifactVerification
from strongroom.ports.driving.webhooks import Webhooks
from strongroom.ports.driving.workspaces import Workspaces

READY_TIMEOUT = 1.5
"""Seconds each readiness probe may take before it counts as unavailable (so that
``/readyz`` answers within 2 s whatever hangs)."""


class Strongroom:
    """Every use case of the service, grouped by resource.

    Build one with ``strongroom.entrypoints.bootstrap.bootstrap()``; every method that acts
    for someone takes the authenticated ``Caller`` that ``access.authenticate`` returns.
    """

    def __init__(self, deps: Dependencies) -> None:
        self.deps = deps
        self.access = Access(deps)
        self.sessions = Sessions(deps)
        self.workspaces = Workspaces(deps, self.access)
        self.backups = Backups(deps, self.access)
        self.runs = Runs(deps, self.access)
        self.artifacts = Artifacts(deps, self.access)
        self.transfers = Transfers(deps, self.access, self.artifacts)
        self.claims = Claims(deps, self.access, self.artifacts)
        self.leases = Leases(deps, self.artifacts)
        # Cloud runs, claimed and executed by the service itself (contract 11).
        self.service_runs = ServiceRuns(deps, self.artifacts)
        self.scheduler = Scheduler(deps)
        self.retention = Retention(deps, self.artifacts, self.access)
        self.holds = Holds(deps, self.access, self.artifacts)
        self.verification = ArtifactVerification(deps, self.artifacts)
        self.restores = Restores(deps, self.access, self.artifacts)
        self.drills = Drills(deps, self.access, self.artifacts)
        self.proofs = Proofs(deps, self.access)
        self.audit = AuditTrail(deps, self.access)
        self.api_keys = ApiKeys(deps, self.access)
        self.workers = Workers(deps, self.access)
        self.members = Members(deps, self.access)
        self.roles = Roles(deps, self.access)
        self.invitations = Invitations(deps, self.access)
        self.health = HealthBoard(deps, self.access)
        self.webhooks = Webhooks(deps, self.access)
        # Readiness probes that outlived READY_TIMEOUT, kept referenced until they end.
        self._abandoned: set[asyncio.Future[None]] = set()

    @property
    def identity(self) -> IdentityProvider:
        """The identity provider people sign in with (a driving adapter may serve the
        built-in provider's own pages)."""
        return self.deps.identity

    @property
    def storage(self) -> ObjectStorage:
        """The service's object storage (local disk serves its own presigned URLs)."""
        return self.deps.storage

    def now(self) -> datetime:
        """The service clock's current instant (what states derived from time use)."""
        return self.deps.clock.now()

    @staticmethod
    def permission_catalog() -> list[tuple[Permission, str]]:
        """Every permission slug with its description, in catalog order."""
        return [(permission, DESCRIPTIONS[permission]) for permission in Permission]

    async def check_ready(self) -> dict[str, str]:
        """Ask the database and object storage whether they answer: ``ok`` or ``unavailable``.

        Both are asked at once and each gets ``READY_TIMEOUT`` seconds: a store that hangs
        (paused, not closed) counts as unavailable instead of holding the answer back. A
        probe still running then is cancelled and left to finish on its own: cancelling
        one that waits on a paused database ends only at that database's own deadline.
        """
        probes = {
            "database": asyncio.ensure_future(self._ping_database()),
            "storage": asyncio.ensure_future(self.deps.namespaces.ping()),
        }
        await asyncio.wait(probes.values(), timeout=READY_TIMEOUT)
        answers = {}
        for name, probe in probes.items():
            if not probe.done():
                probe.cancel()
                self._abandoned.add(probe)
                probe.add_done_callback(self._forget)
            ok = probe.done() and not probe.cancelled() and probe.exception() is None
            answers[name] = "ok" if ok else "unavailable"
        return answers

    def _forget(self, probe: asyncio.Future[None]) -> None:
        """Drop an abandoned probe once it has ended (its outcome no longer matters)."""
        self._abandoned.discard(probe)
        if not probe.cancelled():
            probe.exception()

    async def metrics_snapshot(self) -> ServiceStatistics:
        """Service-wide figures for monitoring (``GET /metrics``): runs and artifacts by
        state, workspaces' stored bytes (no workspace named), the connection pool's use."""
        return await metrics_snapshot(self.deps)

    async def _ping_database(self) -> None:
        async with self.deps.uow() as uow:
            await uow.ping()
