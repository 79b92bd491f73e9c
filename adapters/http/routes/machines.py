"""API keys and workers: the machine credentials of the caller's workspace.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint, json_response, no_content
from strongroom.adapters.http.conventions import located, no_store, tagged
from strongroom.adapters.http.openapi import Paged, api
from strongroom.adapters.http.shapes import (
    ApiKey,
    ApiKeyCreate,
    ApiKeyWithToken,
    EmptyBody,
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


def issued_api_key(issued: IssuedApiKey) -> Any:
    """A new API key with its token (shown only in this response)."""
    return present(issued.key, ApiKeyWithToken, token=issued.token)


def issued_worker(issued: IssuedWorker) -> Any:
    """A worker with its new token (shown only in this response)."""
    return present(issued.worker, WorkerWithToken, token=issued.token)


@no_store
@located("/v1/api-keys/{id}")
@endpoint
async def create_api_key(ctx: ApiContext) -> Response:
    """Create an API key

    A machine credential of the caller's workspace with a fixed set of permissions, each
    of which the caller must hold itself. Needs `api_keys:write`. The token appears only
    in this response."""
    caller = await ctx.caller()
    grant = await ctx.facade.access.authorize(caller, CREATE_API_KEY)
    body = ctx.json(ApiKeyCreate)
    issued = await ctx.facade.api_keys.create(
        grant, body.name, body.permissions, body.expires_at, idempotency=ctx.idempotency()
    )
    return json_response(issued_api_key(issued), 201)


@endpoint
async def list_api_keys(ctx: ApiContext) -> Response:
    """List API keys

    The workspace's API keys, newest first, without tokens. Needs `api_keys:read`."""
    caller = await ctx.caller()
    grant = await ctx.facade.access.authorize(caller, READ_API_KEYS)
    page = await ctx.facade.api_keys.list(grant, ctx.page())
    return answer(page)


@tagged
@endpoint
async def get_api_key(ctx: ApiContext) -> Response:
    """Read an API key

    One API key of the caller's workspace. Needs `api_keys:read`."""
    caller = await ctx.caller()
    key_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, READ_API_KEYS)
    return answer(await ctx.facade.api_keys.get(grant, key_id))


@endpoint
async def delete_api_key(ctx: ApiContext) -> Response:
    """Revoke an API key

    Deletes the key; it answers 401 from the next request on. Needs `api_keys:write`."""
    caller = await ctx.caller()
    key_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, DELETE_API_KEY, target_id=key_id)
    ctx.empty_body()
    await ctx.facade.api_keys.revoke(grant, key_id)
    return no_content()


@no_store
@located("/v1/workers/{id}")
@endpoint
async def create_worker(ctx: ApiContext) -> Response:
    """Register a worker

    A machine executor of local backups in the caller's workspace. Its credential holds
    exactly `backups:read`, `runs:read`, `artifacts:upload` and `artifacts:confirm`,
    limited to the backups assigned to it. Needs `workers:write`. The token appears only
    in this response."""
    caller = await ctx.caller()
    grant = await ctx.facade.access.authorize(caller, CREATE_WORKER)
    body = ctx.json(WorkerCreate)
    issued = await ctx.facade.workers.create(grant, body.name, idempotency=ctx.idempotency())
    return json_response(issued_worker(issued), 201)


@endpoint
async def list_workers(ctx: ApiContext) -> Response:
    """List workers

    The workspace's workers, newest first. Needs `workers:read`."""
    caller = await ctx.caller()
    grant = await ctx.facade.access.authorize(caller, READ_WORKERS)
    page = await ctx.facade.workers.list(grant, ctx.page())
    return answer(page)


@tagged
@endpoint
async def get_worker(ctx: ApiContext) -> Response:
    """Read a worker

    One worker of the caller's workspace. Needs `workers:read`."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, READ_WORKERS)
    return answer(await ctx.facade.workers.get(grant, worker_id))


@no_store
@endpoint
async def rotate_worker(ctx: ApiContext) -> Response:
    """Rotate a worker's credential

    A new token for the worker; the previous one answers 401 from the next request on.
    Needs `workers:write`."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, ROTATE_WORKER, target_id=worker_id)
    ctx.empty_body()
    return json_response(issued_worker(await ctx.facade.workers.rotate(grant, worker_id)))


@endpoint
async def delete_worker(ctx: ApiContext) -> Response:
    """Delete a worker

    Deletes the worker; its credential answers 401 from the next request on. Refused
    while backups are assigned to it. Needs `workers:write`."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    grant = await ctx.facade.access.authorize(caller, DELETE_WORKER, target_id=worker_id)
    ctx.empty_body()
    await ctx.facade.workers.delete(grant, worker_id)
    return no_content()


routes: list[BaseRoute] = [
    api(
        "POST",
        "/v1/api-keys",
        create_api_key,
        "createApiKey",
        "API keys",
        (201, ApiKeyWithToken, "The new key with its token."),
        needs=CREATE_API_KEY,
        body=ApiKeyCreate,
        idempotent=True,
        billing="config",
        errors={
            "forbidden": "a requested permission is not the caller's own",
            "invalid_request": (
                "`name` is empty or longer than 100; `expires_at` is not an RFC 3339 timestamp "
                "with a time zone, or its UTC instant falls outside the years 0001-9999"
            ),
            "validation_failed": (
                "a permission outside the catalog, or `expires_at` not in the future"
            ),
            "quota_exceeded": "`api_keys_per_workspace` is reached",
        },
    ),
    api(
        "GET",
        "/v1/api-keys",
        list_api_keys,
        "listApiKeys",
        "API keys",
        (200, Paged(ApiKey), "One page of keys."),
        needs=READ_API_KEYS,
        paginated=True,
    ),
    api(
        "GET",
        "/v1/api-keys/{id}",
        get_api_key,
        "getApiKey",
        "API keys",
        (200, ApiKey, "The key."),
        needs=READ_API_KEYS,
        errors={"not_found": "no such API key in the caller's workspace"},
    ),
    api(
        "DELETE",
        "/v1/api-keys/{id}",
        delete_api_key,
        "deleteApiKey",
        "API keys",
        (204, None, "Revoked."),
        needs=DELETE_API_KEY,
        empty_body=True,
        billing="config",
        errors={
            "not_found": "no such API key in the caller's workspace",
        },
    ),
    api(
        "POST",
        "/v1/workers",
        create_worker,
        "createWorker",
        "Workers",
        (201, WorkerWithToken, "The new worker with its token."),
        needs=CREATE_WORKER,
        body=WorkerCreate,
        idempotent=True,
        billing="config",
        errors={
            "invalid_request": "`name` is empty or longer than 100",
            "quota_exceeded": "`workers_per_workspace` is reached",
        },
    ),
    api(
        "GET",
        "/v1/workers",
        list_workers,
        "listWorkers",
        "Workers",
        (200, Paged(Worker), "One page of workers."),
        needs=READ_WORKERS,
        paginated=True,
    ),
    api(
        "GET",
        "/v1/workers/{id}",
        get_worker,
        "getWorker",
        "Workers",
        (200, Worker, "The worker."),
        needs=READ_WORKERS,
        errors={"not_found": "no such worker in the caller's workspace"},
    ),
    api(
        "DELETE",
        "/v1/workers/{id}",
        delete_worker,
        "deleteWorker",
        "Workers",
        (204, None, "Deleted."),
        needs=DELETE_WORKER,
        empty_body=True,
        billing="config",
        errors={
            "not_found": "no such worker in the caller's workspace",
            "invalid_state": "backups are assigned to the worker",
        },
    ),
    api(
        "POST",
        "/v1/workers/{id}/rotate",
        rotate_worker,
        "rotateWorker",
        "Workers",
        (200, WorkerWithToken, "The worker with its new token."),
        needs=ROTATE_WORKER,
        body=EmptyBody,
        body_required=False,
        billing="config",
        errors={
            "not_found": "no such worker in the caller's workspace",
        },
    ),
]
