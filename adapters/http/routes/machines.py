"""API keys and workers: the machine credentials of the caller's workspace.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint, json_response, no_content
from strongroom.adapters.http.shapes import (
    ApiKeyCreate,
    ApiKeyWithToken,
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


@endpoint
async def create_api_key(ctx: ApiContext) -> Response:
    """Create an API key; its token appears only in this response."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, CREATE_API_KEY)
    body = ctx.json(ApiKeyCreate)
    with ctx.unsealing_replays():
        issued = await ctx.facade.api_keys.create(
            caller,
            body.name,
            body.permissions,
            body.expires_at,
            idempotency=ctx.sealed_idempotency(issued_api_key),
        )
    return json_response(issued_api_key(issued), 201)


@endpoint
async def list_api_keys(ctx: ApiContext) -> Response:
    """The workspace's API keys, newest first."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, READ_API_KEYS)
    page = await ctx.facade.api_keys.list(caller, ctx.page())
    return answer(page)


@endpoint
async def get_api_key(ctx: ApiContext) -> Response:
    """One API key."""
    caller = await ctx.caller()
    key_id = ctx.path_id("id")
    await ctx.facade.access.authorize(caller, READ_API_KEYS)
    return answer(await ctx.facade.api_keys.get(caller, key_id))


@endpoint
async def delete_api_key(ctx: ApiContext) -> Response:
    """Revoke an API key: it stops working on the next request."""
    caller = await ctx.caller()
    key_id = ctx.path_id("id")
    await ctx.facade.access.authorize(caller, DELETE_API_KEY, target_id=key_id)
    ctx.empty_body()
    await ctx.facade.api_keys.revoke(caller, key_id)
    return no_content()


@endpoint
async def create_worker(ctx: ApiContext) -> Response:
    """Register a worker; its token appears only in this response."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, CREATE_WORKER)
    body = ctx.json(WorkerCreate)
    with ctx.unsealing_replays():
        issued = await ctx.facade.workers.create(
            caller, body.name, idempotency=ctx.sealed_idempotency(issued_worker)
        )
    return json_response(issued_worker(issued), 201)


@endpoint
async def list_workers(ctx: ApiContext) -> Response:
    """The workspace's workers, newest first."""
    caller = await ctx.caller()
    await ctx.facade.access.authorize(caller, READ_WORKERS)
    page = await ctx.facade.workers.list(caller, ctx.page())
    return answer(page)


@endpoint
async def get_worker(ctx: ApiContext) -> Response:
    """One worker."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    await ctx.facade.access.authorize(caller, READ_WORKERS)
    return answer(await ctx.facade.workers.get(caller, worker_id))


@endpoint
async def rotate_worker(ctx: ApiContext) -> Response:
    """A new credential for a worker; the old one stops working at once."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    await ctx.facade.access.authorize(caller, ROTATE_WORKER, target_id=worker_id)
    ctx.empty_body()
    return json_response(issued_worker(await ctx.facade.workers.rotate(caller, worker_id)))


@endpoint
async def delete_worker(ctx: ApiContext) -> Response:
    """Delete a worker (refused while backups are assigned to it)."""
    caller = await ctx.caller()
    worker_id = ctx.path_id("id")
    await ctx.facade.access.authorize(caller, DELETE_WORKER, target_id=worker_id)
    ctx.empty_body()
    await ctx.facade.workers.delete(caller, worker_id)
    return no_content()


routes: list[BaseRoute] = [
    Route("/v1/api-keys", create_api_key, methods=["POST"]),
    Route("/v1/api-keys", list_api_keys, methods=["GET"]),
    Route("/v1/api-keys/{id}", get_api_key, methods=["GET"]),
    Route("/v1/api-keys/{id}", delete_api_key, methods=["DELETE"]),
    Route("/v1/workers", create_worker, methods=["POST"]),
    Route("/v1/workers", list_workers, methods=["GET"]),
    Route("/v1/workers/{id}", get_worker, methods=["GET"]),
    Route("/v1/workers/{id}", delete_worker, methods=["DELETE"]),
    Route("/v1/workers/{id}/rotate", rotate_worker, methods=["POST"]),
]
