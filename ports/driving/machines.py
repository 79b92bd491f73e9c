"""API keys and workers: the machine credentials of a workspace.

A token is shown once, when it is made (creation, rotation); only its hash is stored.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import Change
from strongroom.domain.billing import GatedOperation
from strongroom.domain.errors import InvalidStateError
from strongroom.domain.events import Recorded, created, removed
from strongroom.domain.machines import ApiKey, Worker, check_expiry, in_catalog_order
from strongroom.domain.names import clean_name
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission, requested_permissions
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.workspaces import Admission
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import WorkspaceChange, changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent

READ_API_KEYS = Requirement((Permission.API_KEYS_READ,))
CREATE_API_KEY = Requirement((Permission.API_KEYS_WRITE,), "api_key.create")
DELETE_API_KEY = Requirement((Permission.API_KEYS_WRITE,), "api_key.delete")
READ_WORKERS = Requirement((Permission.WORKERS_READ,))
CREATE_WORKER = Requirement((Permission.WORKERS_WRITE,), "worker.create")
ROTATE_WORKER = Requirement((Permission.WORKERS_WRITE,), "worker.rotate")
DELETE_WORKER = Requirement((Permission.WORKERS_WRITE,), "worker.delete")
ADMIT_API_KEY = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.API_KEYS_PER_WORKSPACE)
ADMIT_WORKER = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.WORKERS_PER_WORKSPACE)


@attrs.frozen
class IssuedApiKey:
    """A new API key and its token (shown only once; ``None`` only in an Idempotency-Key
    replay whose sealed token can no longer be opened)."""

    key: ApiKey
    token: str | None = attrs.field(repr=False)


@attrs.frozen
class IssuedWorker:
    """A worker and its new token (shown only once: at creation and at rotation; ``None``
    only in an Idempotency-Key replay whose sealed token can no longer be opened)."""

    worker: Worker
    token: str | None = attrs.field(repr=False)


ISSUED_API_KEY = ResultForm(IssuedApiKey, sealed="token")
ISSUED_WORKER = ResultForm(IssuedWorker, sealed="token")


class ApiKeys:
    """API keys: machine credentials with a fixed subset of their creator's permissions."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def create(
        self,
        caller: Caller | Grant,
        name: str,
        slugs: list[str],
        expires_at: datetime | None = None,
        idempotency: IdempotencyKey | None = None,
    ) -> IssuedApiKey:
        """Create a key in the caller's workspace; its permissions must be the caller's."""
        caller, workspace_id = await self._access.resolve(caller, CREATE_API_KEY)
        name = clean_name(name)
        permissions = requested_permissions(slugs)
        await self._access.refuse_escalation(caller, workspace_id, "api_key.create", permissions)
        now = self._deps.clock.now()
        check_expiry(expires_at, now)

        async def store(uow: UnitOfWork) -> IssuedApiKey:
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            workspace = await change.locked()
            workspace.admit(ADMIT_API_KEY, await uow.api_keys.count(workspace_id))
            token = format_token(TokenKind.API_KEY, self._deps.ids.random_bytes(32))
            key = ApiKey(
                self._deps.ids.new_id(),
                workspace_id,
                name,
                permissions,
                hash_token(token),
                now,
                expires_at,
            )
            await uow.api_keys.add(key)
            change.collect(
                Recorded(
                    "api_key.create",
                    key.id,
                    {
                        "name": Change(None, name),
                        "permissions": Change(
                            None, [p.value for p in in_catalog_order(permissions)]
                        ),
                        "expires_at": Change(None, _iso(expires_at)),
                    },
                )
            )
            return IssuedApiKey(key, token)

        return await run_idempotent(self._deps, caller, idempotency, now, store, ISSUED_API_KEY)

    async def list(self, caller: Caller | Grant, page: PageRequest) -> Page[ApiKey]:
        """The workspace's keys, newest first (never their tokens)."""
        caller, workspace_id = await self._access.resolve(caller, READ_API_KEYS)
        async with self._deps.uow() as uow:
            return await uow.api_keys.list(workspace_id, page)

    async def get(self, caller: Caller | Grant, key_id: UUID) -> ApiKey:
        """One key of the caller's workspace."""
        caller, workspace_id = await self._access.resolve(caller, READ_API_KEYS)
        async with self._deps.uow() as uow:
            key = await uow.api_keys.get(workspace_id, key_id)
        return lookups.existing(key, "API key")

    async def revoke(self, caller: Caller | Grant, key_id: UUID) -> None:
        """Delete a key; it stops working on the very next request."""
        caller, workspace_id = await self._access.resolve(caller, DELETE_API_KEY, target_id=key_id)
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            key = lookups.existing(await uow.api_keys.get(workspace_id, key_id), "API key")
            await change.gate()
            await uow.api_keys.remove(workspace_id, key_id)
            change.collect(Recorded("api_key.delete", key_id, {"name": Change(key.name, None)}))


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


class Workers:
    """Workers: machine executors of local backups."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    def _new_token(self) -> str:
        return format_token(TokenKind.WORKER, self._deps.ids.random_bytes(32))

    async def create(
        self,
        caller: Caller | Grant,
        name: str,
        idempotency: IdempotencyKey | None = None,
    ) -> IssuedWorker:
        """Register a worker in the caller's workspace; its token is returned once."""
        caller, workspace_id = await self._access.resolve(caller, CREATE_WORKER)
        name = clean_name(name)
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> IssuedWorker:
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            workspace = await change.locked()
            workspace.admit(ADMIT_WORKER, await uow.workers.count(workspace_id))
            token = self._new_token()
            worker = Worker(self._deps.ids.new_id(), workspace_id, name, hash_token(token), now)
            await uow.workers.add(worker)
            change.collect(created("worker.create", worker))
            return IssuedWorker(worker, token)

        return await run_idempotent(self._deps, caller, idempotency, now, store, ISSUED_WORKER)

    async def list(self, caller: Caller | Grant, page: PageRequest) -> Page[Worker]:
        """The workspace's workers, newest first."""
        caller, workspace_id = await self._access.resolve(caller, READ_WORKERS)
        async with self._deps.uow() as uow:
            return await uow.workers.list(workspace_id, page)

    async def get(self, caller: Caller | Grant, worker_id: UUID) -> Worker:
        """One worker of the caller's workspace."""
        caller, workspace_id = await self._access.resolve(caller, READ_WORKERS)
        async with self._deps.uow() as uow:
            return lookups.existing(await uow.workers.get(workspace_id, worker_id), "worker")

    async def rotate(self, caller: Caller | Grant, worker_id: UUID) -> IssuedWorker:
        """Give a worker a new credential; the old one stops working at once."""
        caller, workspace_id = await self._access.resolve(
            caller, ROTATE_WORKER, target_id=worker_id
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            worker = lookups.existing(await uow.workers.get(workspace_id, worker_id), "worker")
            await change.gate()
            token = self._new_token()
            rotated = worker.rotated(hash_token(token))
            await uow.workers.update(rotated)
            # The token is a secret: the audit records only that it changed.
            change.collect(worker.recorded_rotation())
        return IssuedWorker(rotated, token)

    async def delete(self, caller: Caller | Grant, worker_id: UUID) -> None:
        """Delete a worker; refused while a backup is assigned to it."""
        caller, workspace_id = await self._access.resolve(
            caller, DELETE_WORKER, target_id=worker_id
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            worker = lookups.existing(await uow.workers.get(workspace_id, worker_id), "worker")
            await change.gate()
            if (await uow.backups.list(workspace_id, PageRequest(1), worker_id=worker_id)).items:
                raise InvalidStateError(
                    "backups are assigned to this worker: assign them another worker first"
                )
            await uow.workers.remove(workspace_id, worker_id)
            change.collect(removed("worker.delete", worker))
