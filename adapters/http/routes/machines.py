"""API keys and workers: the machine credentials of the caller's workspace."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from strongroom.adapters.http.context import ApiContext, answer, json_response, no_content
from strongroom.adapters.http.openapi import Paged, Routes
from strongroom.adapters.http.shapes import (
    ApiKey,
    ApiKeyCreate,
    ApiKeyWithToken,
    Worker,
    WorkerCreate,
    WorkerWithToken,
)
from strongroom.adapters.http.wire import present
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


@keys.create(
    "/v1/api-keys",
    ApiKeyWithToken,
    "The new key with its token.",
    CREATE_API_KEY,
    body=ApiKeyCreate,
)
async def create_api_key(ctx: ApiContext) -> Response:
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
    grant = await ctx.grant(CREATE_API_KEY)
    body = ctx.json(ApiKeyCreate)
    issued = await ctx.facade.api_keys.create(
        grant, body.name, body.permissions, body.expires_at, idempotency=ctx.idempotency()
    )
    return json_response(issued_api_key(issued), 201)


@keys.get("/v1/api-keys", Paged(ApiKey), "One page of keys.", READ_API_KEYS)
async def list_api_keys(ctx: ApiContext) -> Response:
    """List API keys

    The workspace's API keys, newest first, without tokens. Needs `api_keys:read`."""
    grant = await ctx.grant(READ_API_KEYS)
    page = await ctx.facade.api_keys.list(grant, ctx.page())
    return answer(page)


@keys.get("/v1/api-keys/{id}", ApiKey, "The key.", READ_API_KEYS)
async def get_api_key(ctx: ApiContext) -> Response:
    """Read an API key

    One API key of the caller's workspace. Needs `api_keys:read`."""
    grant = await ctx.grant(READ_API_KEYS)
    return answer(await ctx.facade.api_keys.get(grant, ctx.path_id("id")))


@keys.delete("/v1/api-keys/{id}", "Revoked.", DELETE_API_KEY, empty_body=True)
async def delete_api_key(ctx: ApiContext) -> Response:
    """Revoke an API key

    Deletes the key; it answers 401 from the next request on. Needs `api_keys:write`."""
    grant = await ctx.grant(DELETE_API_KEY, "id")
    ctx.empty_body()
    await ctx.facade.api_keys.revoke(grant, ctx.path_id("id"))
    return no_content()


@routes.create(
    "/v1/workers",
    WorkerWithToken,
    "The new worker with its token.",
    CREATE_WORKER,
    body=WorkerCreate,
)
async def create_worker(ctx: ApiContext) -> Response:
    """Register a worker

    A machine executor of local backups in the caller's workspace. Its credential holds
    exactly `backups:read`, `runs:read`, `artifacts:upload` and `artifacts:confirm`,
    limited to the backups assigned to it. Needs `workers:write`. The token appears only
    in this response.

    Errors:
    - `invalid_request`: `name` is empty or longer than 100
    - `quota_exceeded`: `workers_per_workspace` is reached"""
    grant = await ctx.grant(CREATE_WORKER)
    body = ctx.json(WorkerCreate)
    issued = await ctx.facade.workers.create(grant, body.name, idempotency=ctx.idempotency())
    return json_response(issued_worker(issued), 201)


@routes.get("/v1/workers", Paged(Worker), "One page of workers.", READ_WORKERS)
async def list_workers(ctx: ApiContext) -> Response:
    """List workers

    The workspace's workers, newest first. Needs `workers:read`."""
    grant = await ctx.grant(READ_WORKERS)
    page = await ctx.facade.workers.list(grant, ctx.page())
    return answer(page)


@routes.get("/v1/workers/{id}", Worker, "The worker.", READ_WORKERS)
async def get_worker(ctx: ApiContext) -> Response:
    """Read a worker

    One worker of the caller's workspace. Needs `workers:read`."""
    grant = await ctx.grant(READ_WORKERS)
    return answer(await ctx.facade.workers.get(grant, ctx.path_id("id")))


@routes.action(
    "/v1/workers/{id}/rotate", WorkerWithToken, "The worker with its new token.", ROTATE_WORKER
)
async def rotate_worker(ctx: ApiContext) -> Response:
    """Rotate a worker's credential

    A new token for the worker; the previous one answers 401 from the next request on.
    Needs `workers:write`."""
    grant = await ctx.grant(ROTATE_WORKER, "id")
    ctx.empty_body()
    return json_response(issued_worker(await ctx.facade.workers.rotate(grant, ctx.path_id("id"))))


@routes.delete("/v1/workers/{id}", "Deleted.", DELETE_WORKER, empty_body=True)
async def delete_worker(ctx: ApiContext) -> Response:
    """Delete a worker

    Deletes the worker; its credential answers 401 from the next request on. Refused
    while backups are assigned to it. Needs `workers:write`.

    Errors:
    - `invalid_state`: backups are assigned to the worker"""
    grant = await ctx.grant(DELETE_WORKER, "id")
    ctx.empty_body()
    await ctx.facade.workers.delete(grant, ctx.path_id("id"))
    return no_content()
