"""Workspaces: creation with all-or-nothing provisioning, reads, renames, deletion, quotas,
and the operator actions on billing state and limits."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import ArtifactStorage
from strongroom.domain.audit import Change
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    ArtifactLockedError,
    StrongroomError,
    UpstreamUnavailableError,
)
from strongroom.domain.events import Recorded
from strongroom.domain.names import clean_name
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import ADMIN, Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import (
    WORKSPACES_PER_USER,
    WORKSPACES_PER_USER_RESOURCE,
    Quota,
    QuotaResource,
    ensure_room,
)
from strongroom.domain.workspaces import Membership, MemberWorkspace, Workspace
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import (
    IdempotencyKey,
    ResultForm,
    replay_if_known,
    run_idempotent,
)
from strongroom.ports.driving.preconditions import Precondition, check_precondition
from strongroom.ports.driving.recording import by_caller, by_system

logger = logging.getLogger(__name__)
T = TypeVar("T")

CREATE_REFUSAL = "only a person can create a workspace; machine credentials cannot"
LIST_REFUSAL = "only a person can list memberships; machine credentials cannot"
READ_WORKSPACE = Requirement((Permission.WORKSPACES_READ,))
UPDATE_WORKSPACE = Requirement((Permission.WORKSPACES_WRITE,), "workspace.update")
DELETE_WORKSPACE = Requirement((Permission.WORKSPACES_WRITE,), "workspace.delete")
WORKSPACE = ResultForm(Workspace)


async def call_upstream(what: str, operation: Callable[[], Awaitable[T]]) -> T:
    """Run a call to an outside system; any failure of it is ``upstream_unavailable``."""
    try:
        return await operation()
    except StrongroomError:
        raise
    except Exception as error:
        raise UpstreamUnavailableError(f"{what} is unavailable; try again later") from error


class Workspaces:
    """Workspace use cases."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def create(
        self, caller: Caller, name: str, idempotency: IdempotencyKey | None = None
    ) -> Workspace:
        """Create a workspace: an organization, a customer record and a storage namespace are
        provisioned all-or-nothing, and the creator becomes its admin."""
        user = caller.person(CREATE_REFUSAL)
        name = clean_name(name)
        now = self._deps.clock.now()
        first = await replay_if_known(self._deps, caller, idempotency, now, WORKSPACE)
        if first is not None:
            return first
        async with self._deps.uow() as uow:
            ensure_room(
                WORKSPACES_PER_USER_RESOURCE,
                WORKSPACES_PER_USER,
                await uow.workspaces.count_created_by(user.id),
            )
        workspace_id = self._deps.ids.new_id()
        undo: list[Callable[[], Awaitable[None]]] = []
        try:
            org_id = await call_upstream(
                "the identity provider", lambda: self._deps.identity.create_organization(name)
            )
            undo.append(lambda: self._deps.identity.delete_organization(org_id))
            customer_id = await call_upstream(
                "billing", lambda: self._deps.billing.create_customer(workspace_id, name)
            )
            undo.append(lambda: self._deps.billing.delete_customer(customer_id))
            namespace = await call_upstream(
                "object storage", lambda: self._deps.namespaces.provision_namespace(workspace_id)
            )
            undo.append(lambda: self._deps.namespaces.remove_namespace(namespace))
            now = self._deps.clock.now()
            workspace = Workspace(
                workspace_id,
                name,
                org_id,
                customer_id,
                namespace,
                user.id,
                BillingState.TRIAL,
                now,
                now,
            )

            async def store(uow: UnitOfWork) -> Workspace:
                await uow.users.get(user.id, for_update=True)
                ensure_room(
                    WORKSPACES_PER_USER_RESOURCE,
                    WORKSPACES_PER_USER,
                    await uow.workspaces.count_created_by(user.id),
                )
                await uow.workspaces.add(workspace)
                await uow.memberships.add(Membership(workspace_id, user.id, ADMIN.slug, now))
                made = Recorded("workspace.create", workspace_id, {"name": Change(None, name)})
                uow.collect(by_caller(self._deps, caller, workspace_id, made))
                return workspace

            return await run_idempotent(self._deps, caller, idempotency, now, store, WORKSPACE)
        except BaseException:
            await _undo_all(undo)
            raise

    async def memberships(self, caller: Caller, page: PageRequest) -> Page[MemberWorkspace]:
        """The caller's memberships, newest workspace first."""
        user = caller.person(LIST_REFUSAL)
        async with self._deps.uow() as uow:
            return await uow.memberships.list_for_user(user.id, page)

    async def get(self, caller: Caller | Grant, workspace_id: UUID) -> Workspace:
        """One workspace."""
        caller, _ = await self._access.resolve(caller, READ_WORKSPACE, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await lookups.workspace(uow, workspace_id)

    async def rename(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        name: str,
        *,
        precondition: Precondition[Workspace] | None = None,
    ) -> Workspace:
        """Change a workspace's name (``precondition``: as ``BackupsService.update``)."""
        caller, _ = await self._access.resolve(
            caller, UPDATE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
        )
        name = clean_name(name)
        async with changing(self._deps, caller, workspace_id) as change:
            check_precondition(precondition, await change.locked(), "workspace")
            workspace = await change.gate()
            renamed = workspace.renamed(name, self._deps.clock.now())
            await change.uow.workspaces.update(renamed)
            renaming = {"name": Change(workspace.name, name)}
            change.collect(Recorded("workspace.update", workspace_id, renaming))
        return renamed

    async def delete(self, caller: Caller | Grant, workspace_id: UUID) -> None:
        """Delete a workspace and all its records, audit trail included; irreversible.

        Its sessions, API keys and workers stop working at once. Allowed in every billing
        state. The organization, customer record and namespace are released afterwards.
        """
        caller, _ = await self._access.resolve(
            caller, DELETE_WORKSPACE, workspace_id=workspace_id, target_id=workspace_id
        )
        async with self._deps.uow() as uow:
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            if await uow.artifacts.any_locked(
                workspace_id, self._deps.clock.now(), storage=ArtifactStorage.SERVICE
            ):
                raise ArtifactLockedError(
                    "an artifact in service storage is inside its lock window"
                )
            await uow.workspaces.remove(workspace_id)
            await uow.commit()
        logger.info(
            "workspace %s deleted by %s:%s", workspace_id, caller.actor.type, caller.actor.id
        )
        await _undo_all(
            [
                lambda: self._deps.namespaces.remove_namespace(workspace.storage_namespace),
                lambda: self._deps.billing.delete_customer(workspace.customer_id),
                lambda: self._deps.identity.delete_organization(workspace.idp_org_id),
            ]
        )

    async def quotas(self, caller: Caller | Grant, workspace_id: UUID) -> list[Quota]:
        """Every quota resource's effective limit and current usage."""
        caller, _ = await self._access.resolve(caller, READ_WORKSPACE, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            workspace = await lookups.workspace(uow, workspace_id)
            usage = {
                QuotaResource.BACKUPS_PER_WORKSPACE: await uow.backups.count(workspace_id),
                QuotaResource.WORKERS_PER_WORKSPACE: await uow.workers.count(workspace_id),
                QuotaResource.API_KEYS_PER_WORKSPACE: await uow.api_keys.count(workspace_id),
                # Pending invitations hold a seat until they are used or expire.
                QuotaResource.MEMBERS_PER_WORKSPACE: await uow.memberships.count(workspace_id)
                + await uow.invitations.count_pending(workspace_id, self._deps.clock.now()),
                QuotaResource.STORAGE_BYTES: await uow.artifacts.storage_bytes(workspace_id),
            }
        return [
            Quota(resource, workspace.limit(resource), usage.get(resource, 0))
            for resource in QuotaResource
        ]

    async def set_billing_state(self, workspace_id: UUID, state: BillingState) -> Workspace:
        """Operator action: move a workspace to another billing state (audited as system)."""
        async with self._deps.uow() as uow:
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            changed = workspace.with_billing_state(state, self._deps.clock.now())
            await uow.workspaces.update(changed)
            billing = {"billing_state": Change(workspace.billing_state.value, state.value)}
            uow.collect(
                by_system(
                    self._deps, workspace_id, Recorded("billing.update", workspace_id, billing)
                )
            )
            await uow.commit()
        return changed

    async def set_quota(self, workspace_id: UUID, resource: QuotaResource, limit: int) -> Workspace:
        """Operator action: set a workspace's limit for ``resource`` (0: unlimited)."""
        if limit < 0:
            raise ValueError("a limit is 0 (unlimited) or more")
        async with self._deps.uow() as uow:
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            changed = workspace.with_limit(resource, limit, self._deps.clock.now())
            await uow.workspaces.update(changed)
            quota = {resource.value: Change(workspace.limit(resource), limit)}
            uow.collect(
                by_system(self._deps, workspace_id, Recorded("quota.update", workspace_id, quota))
            )
            await uow.commit()
        return changed

    async def find(self, workspace_id: UUID) -> Workspace:
        """Operator look-up of a workspace, without a caller."""
        async with self._deps.uow() as uow:
            return await lookups.workspace(uow, workspace_id)


async def _undo_all(steps: list[Callable[[], Awaitable[None]]]) -> None:
    """Run compensations newest first; one that fails is logged, never raised over the cause."""
    for step in reversed(steps):
        try:
            await step()
        except Exception:
            logger.exception("compensation step failed; an orphan may remain upstream")
