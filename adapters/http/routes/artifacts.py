"""Artifacts: upload URLs, confirmation, list, download URLs, delete.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, billing, quota, other 409s).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.shapes import Download, MultipartUpload, SingleUpload, UploadPart
from strongroom.adapters.http.shapes import UploadRequest as UploadBody
from strongroom.adapters.http.wire import present, timestamp
from strongroom.domain.errors import InvalidRequestError
from strongroom.ports.driving.artifacts import (
    CONFIRM_RUN,
    DELETE_ARTIFACT,
    DOWNLOAD_ARTIFACT,
    LIST_ARTIFACTS,
    REQUEST_UPLOAD,
)


def absolute(url: str, base_url: str) -> str:
    """A presigned URL; the local-disk storage's paths are resolved against ``base_url``."""
    return base_url + url if url.startswith("/") else url


def upload_plan(plan: Any, base_url: str) -> Response:
    """``upload-url``: one presigned PUT, or the parts of a multipart upload."""
    if plan.request is not None:
        return answer(plan, 201, SingleUpload, url=absolute(plan.request.url, base_url))
    parts = [
        present(part, UploadPart, url=absolute(part.request.url, base_url)) for part in plan.parts
    ]
    return answer(plan, 201, MultipartUpload, parts=parts)


@endpoint
async def upload_url(ctx: ApiContext) -> Response:
    """Announce an artifact and presign its upload (201)."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    await ctx.facade.access.authorize(caller, REQUEST_UPLOAD, target_id=run_id)
    body = ctx.json(UploadBody)
    plan = await ctx.facade.artifacts.upload_url(caller, run_id, body.name, body.size, body.sha256)
    return upload_plan(plan, ctx.base_url)


@endpoint
async def confirm_run(ctx: ApiContext) -> Response:
    """Check every announced artifact in storage; the run succeeds, or nothing changes."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    await ctx.facade.access.authorize(caller, CONFIRM_RUN, target_id=run_id)
    ctx.empty_body()
    return answer(await ctx.facade.artifacts.confirm(caller, run_id))


@endpoint
async def list_artifacts(ctx: ApiContext) -> Response:
    """A workspace's artifacts, newest first; ``?state=deleted`` lists only deleted ones."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    await ctx.facade.access.authorize(caller, LIST_ARTIFACTS, workspace_id=workspace_id)
    state = ctx.request.query_params.get("state")
    if state not in (None, "deleted"):
        raise InvalidRequestError("state must be deleted (or left out)")
    page = await ctx.facade.artifacts.list_in(caller, workspace_id, state == "deleted", ctx.page())
    return answer(page)


@endpoint
async def download_url(ctx: ApiContext) -> Response:
    """Presign a download of an available artifact in service storage."""
    caller = await ctx.caller()
    artifact_id = ctx.path_id("aid")
    await ctx.facade.access.authorize(caller, DOWNLOAD_ARTIFACT, target_id=artifact_id)
    ctx.empty_body()
    request, expires_at = await ctx.facade.artifacts.download_url(caller, artifact_id)
    url, expires = absolute(request.url, ctx.base_url), timestamp(expires_at)
    return answer(request, 200, Download, url=url, expires_at=expires)


@endpoint
async def delete_artifact(ctx: ApiContext) -> Response:
    """Delete an artifact's object; its record stays as ``deleted``."""
    caller = await ctx.caller()
    artifact_id = ctx.path_id("aid")
    await ctx.facade.access.authorize(caller, DELETE_ARTIFACT, target_id=artifact_id)
    await ctx.facade.artifacts.delete(caller, artifact_id)
    return no_content()


routes: list[BaseRoute] = [
    Route("/v1/runs/{run_id}/upload-url", upload_url, methods=["POST"]),
    Route("/v1/runs/{run_id}/confirm", confirm_run, methods=["POST"]),
    Route("/v1/workspaces/{wid}/artifacts", list_artifacts, methods=["GET"]),
    Route("/v1/artifacts/{aid}/download-url", download_url, methods=["POST"]),
    Route("/v1/artifacts/{aid}", delete_artifact, methods=["DELETE"]),
]
