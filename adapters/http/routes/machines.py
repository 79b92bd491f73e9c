"""API keys and workers: the machine credentials of the caller's workspace."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from strongroom.adapters.webkit.declare import Paged, Routes
from strongroom.adapters.wire.machines import (
    ApiKey,
    ApiKeyCreate,
    ApiKeyWithToken,
    Worker,
    WorkerCreate,
    WorkerWithToken,
)
from strongroom.adapters.wire.present import present
from strongroom.domain.machines import ApiKey as DomainApiKey
from strongroom.domain.machines import Worker as DomainWorker
from strongroom.domain.pagination import Page, PageRequest
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.machines import (
    CREATE_API_KEY,
    CREATE_WORKER,
    DELETE_API_KEY,
    DELETE_WORKER,
    READ_API_KEYS,
    READ_WORKERS,
    ROTATE_WORKER,
    IssuedApiKey,
    IssuedWorker,
)

routes = Routes("Workers", billing="config")
keys = routes.tagged("API keys")


def issued_api_key(issued: IssuedApiKey) -> Any:
    """A new API key with its token (shown only in this response)."""
    return present(issued.key, ApiKeyWithToken, token=issued.token)


def issued_worker(issued: IssuedWorker) -> Any:
    """A worker with its new token (shown only in this response)."""
    return present(issued.worker, WorkerWithToken, token=issued.token)


@keys.create("/v1/api-keys", ApiKeyWithToken, "The new key with its token.", CREATE_API_KEY)
async def create_api_key(
    facade: Strongroom, grant: Grant, body: ApiKeyCreate, idempotency: IdempotencyKey | None
) -> Any:
    """Create an API key

    A machine credential of the caller's workspace with a fixed set of permissions, each
    of which the caller must hold itself. Needs `api_keys:write`. The token appears only
    in this response.

    Errors:
    - `forbidden`: a requested permission is not the caller's own
    - `invalid_request`: `name` is empty or longer than 100; `expires_at` is not an RFC 3339
      timestamp with a time zone, or its UTC instant falls outside the years 0001-9999
    - `validation_failed`: a permission outside the catalog, or `expires_at` not in the future
    - `quota_exceeded`: `api_keys_per_workspace` is reached"""
    issued = await facade.api_keys.create(
        grant, body.name, body.permissions, body.expires_at, idempotency=idempotency
    )
    return issued_api_key(issued)


@keys.get("/v1/api-keys", Paged(ApiKey), "One page of keys.", READ_API_KEYS)
async def list_api_keys(facade: Strongroom, grant: Grant, page: PageRequest) -> Page[DomainApiKey]:
    """List API keys

    The workspace's API keys, newest first, without tokens. Needs `api_keys:read`."""
    return await facade.api_keys.list(grant, page)


@keys.get("/v1/api-keys/{id}", ApiKey, "The key.", READ_API_KEYS)
async def get_api_key(facade: Strongroom, grant: Grant, id: UUID) -> DomainApiKey:
    """Read an API key

    One API key of the caller's workspace. Needs `api_keys:read`."""
    return await facade.api_keys.get(grant, id)


@keys.delete("/v1/api-keys/{id}", "Revoked.", DELETE_API_KEY, empty_body=True)
async def delete_api_key(facade: Strongroom, grant: Grant, id: UUID) -> None:
    """Revoke an API key

    Deletes the key; it answers 401 from the next request on. Needs `api_keys:write`."""
    await facade.api_keys.revoke(grant, id)


@routes.create("/v1/workers", WorkerWithToken, "The new worker with its token.", CREATE_WORKER)
async def create_worker(
    facade: Strongroom, grant: Grant, body: WorkerCreate, idempotency: IdempotencyKey | None
) -> Any:
    """Register a worker

    A machine executor of local backups in the caller's workspace. Its credential holds
    exactly `backups:read`, `runs:read`, `artifacts:upload` and `artifacts:confirm`,
    limited to the backups assigned to it. Needs `workers:write`. The token appears only
    in this response.

    Errors:
    - `invalid_request`: `name` is empty or longer than 100
    - `quota_exceeded`: `workers_per_workspace` is reached"""
    return issued_worker(await facade.workers.create(grant, body.name, idempotency=idempotency))


@routes.get("/v1/workers", Paged(Worker), "One page of workers.", READ_WORKERS)
async def list_workers(facade: Strongroom, grant: Grant, page: PageRequest) -> Page[DomainWorker]:
    """List workers

    The workspace's workers, newest first. Needs `workers:read`."""
    return await facade.workers.list(grant, page)


@routes.get("/v1/workers/{id}", Worker, "The worker.", READ_WORKERS)
async def get_worker(facade: Strongroom, grant: Grant, id: UUID) -> DomainWorker:
    """Read a worker

    One worker of the caller's workspace. Needs `workers:read`."""
    return await facade.workers.get(grant, id)


@routes.action(
    "/v1/workers/{id}/rotate", WorkerWithToken, "The worker with its new token.", ROTATE_WORKER
)
async def rotate_worker(facade: Strongroom, grant: Grant, id: UUID) -> Any:
    """Rotate a worker's credential

    A new token for the worker; the previous one answers 401 from the next request on.
    Needs `workers:write`."""
    return issued_worker(await facade.workers.rotate(grant, id))


@routes.delete("/v1/workers/{id}", "Deleted.", DELETE_WORKER, empty_body=True)
async def delete_worker(facade: Strongroom, grant: Grant, id: UUID) -> None:
    """Delete a worker

    Deletes the worker; its credential answers 401 from the next request on. Refused
    while backups are assigned to it. Needs `workers:write`.

    Errors:
    - `invalid_state`: backups are assigned to the worker"""
    await facade.workers.delete(grant, id)
