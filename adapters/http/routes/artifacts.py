"""Artifacts: upload URLs, confirmation, list, download URLs, delete.

Every handler runs the contract's order of checks: credential, path id, workspace and
permission (``authorize``), body, then the use case (404, billing, quota, other 409s).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.conventions import located, no_store
from strongroom.adapters.http.openapi import Named, Paged, api
from strongroom.adapters.http.shapes import (
    Artifact,
    Download,
    EmptyBody,
    MultipartUpload,
    Run,
    SingleUpload,
    UploadPart,
    UploadPlan,
    UploadRequest,
)
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


@no_store
@located("/v1/runs/{run_id}")
@endpoint
async def upload_url(ctx: ApiContext) -> Response:
    """Presign an artifact's upload

    Announces an artifact of the run (state `pending`) and presigns its upload: one PUT
    below the multipart threshold (`STRONGROOM_MULTIPART_THRESHOLD`, 64 MiB by default),
    otherwise one PUT per 16 MiB part. URLs live 15 minutes. Asking again for the same
    name, size and sha256 gives the same artifact, fresh URLs and the parts already
    stored."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    grant = await ctx.facade.access.authorize(caller, REQUEST_UPLOAD, target_id=run_id)
    body = ctx.json(UploadRequest)
    plan = await ctx.facade.artifacts.upload_url(grant, run_id, body.name, body.size, body.sha256)
    return upload_plan(plan, ctx.base_url)


@endpoint
async def confirm_run(ctx: ApiContext) -> Response:
    """Confirm a run's artifacts

    Checks every announced artifact in storage (present, same size, same sha256) and
    joins multipart uploads; all become `available` (locked and expiring per the
    backup's retention) and the run `succeeded`, or nothing changes."""
    caller = await ctx.caller()
    run_id = ctx.path_id("run_id")
    grant = await ctx.facade.access.authorize(caller, CONFIRM_RUN, target_id=run_id)
    ctx.empty_body()
    return answer(await ctx.facade.artifacts.confirm(grant, run_id))


@endpoint
async def list_artifacts(ctx: ApiContext) -> Response:
    """List artifacts

    The workspace's artifacts, newest first; deleted ones only with `?state=deleted`.
    Never refused for billing."""
    caller = await ctx.caller()
    workspace_id = ctx.path_id("wid")
    grant = await ctx.facade.access.authorize(caller, LIST_ARTIFACTS, workspace_id=workspace_id)
    state = ctx.request.query_params.get("state")
    if state not in (None, "deleted"):
        raise InvalidRequestError("state must be deleted (or left out)")
    page = await ctx.facade.artifacts.list_in(grant, workspace_id, state == "deleted", ctx.page())
    return answer(page)


@no_store
@endpoint
async def download_url(ctx: ApiContext) -> Response:
    """Presign an artifact's download

    A presigned GET (15 minutes) of an available artifact in service storage; the bytes
    come from storage. Never refused for billing."""
    caller = await ctx.caller()
    artifact_id = ctx.path_id("aid")
    grant = await ctx.facade.access.authorize(caller, DOWNLOAD_ARTIFACT, target_id=artifact_id)
    ctx.empty_body()
    request, expires_at = await ctx.facade.artifacts.download_url(grant, artifact_id)
    url, expires = absolute(request.url, ctx.base_url), timestamp(expires_at)
    return answer(request, 200, Download, url=url, expires_at=expires)


@endpoint
async def delete_artifact(ctx: ApiContext) -> Response:
    """Delete an artifact

    Removes the object; the record stays as `deleted`. Precedence: already deleted,
    inside its lock, last of its backup."""
    caller = await ctx.caller()
    artifact_id = ctx.path_id("aid")
    grant = await ctx.facade.access.authorize(caller, DELETE_ARTIFACT, target_id=artifact_id)
    await ctx.facade.artifacts.delete(grant, artifact_id)
    return no_content()


routes: list[BaseRoute] = [
    api(
        "POST",
        "/v1/runs/{run_id}/upload-url",
        upload_url,
        "requestUpload",
        "Runs and artifacts",
        (201, Named("UploadPlan", UploadPlan), "The upload plan."),
        needs=REQUEST_UPLOAD,
        body=UploadRequest,
        billing="uploads",
        errors={
            "invalid_request": "`size` out of range, `sha256` not 64 hex digits",
            "not_found": "no such run in the caller's workspace",
            "quota_exceeded": "`storage_bytes` would be passed",
            "invalid_state": (
                "the run is finished, or the name is announced with another size or sha256"
            ),
            "upstream_unavailable": "the database or object storage failed; nothing was recorded",
        },
    ),
    api(
        "POST",
        "/v1/runs/{run_id}/confirm",
        confirm_run,
        "confirmRun",
        "Runs and artifacts",
        (200, Run, "The succeeded run."),
        needs=CONFIRM_RUN,
        body=EmptyBody,
        body_required=False,
        billing="uploads",
        errors={
            "not_found": "no such run in the caller's workspace",
            "invalid_state": "the run is finished",
            "artifact_missing": "an announced artifact is absent or different",
            "upstream_unavailable": "the database or object storage failed; nothing was recorded",
        },
    ),
    api(
        "GET",
        "/v1/workspaces/{wid}/artifacts",
        list_artifacts,
        "listArtifacts",
        "Runs and artifacts",
        (200, Paged(Artifact), "One page of artifacts."),
        needs=LIST_ARTIFACTS,
        paginated=True,
        parameters=(
            {
                "name": "state",
                "in": "query",
                "required": False,
                "description": "`deleted` lists only deleted artifacts.",
                "schema": {"type": "string", "enum": ["deleted"]},
            },
        ),
        errors={"invalid_request": "`state` is not `deleted`"},
    ),
    api(
        "POST",
        "/v1/artifacts/{aid}/download-url",
        download_url,
        "requestDownload",
        "Runs and artifacts",
        (200, Download, "The presigned download."),
        needs=DOWNLOAD_ARTIFACT,
        body=EmptyBody,
        body_required=False,
        errors={
            "not_found": "no such artifact in the caller's workspace",
            "conflict": "the artifact is deleted",
            "not_in_our_storage": "the artifact went only to a customer bucket",
            "invalid_state": "the artifact is not confirmed yet",
        },
    ),
    api(
        "DELETE",
        "/v1/artifacts/{aid}",
        delete_artifact,
        "deleteArtifact",
        "Runs and artifacts",
        (204, None, "Deleted."),
        needs=DELETE_ARTIFACT,
        billing="config",
        errors={
            "not_found": "no such artifact in the caller's workspace",
            "conflict": "already deleted",
            "artifact_locked": "inside its lock window (storage refuses too)",
            "last_artifact": "the only available artifact of its backup",
            "upstream_unavailable": "the database or object storage failed; nothing was recorded",
        },
    ),
]
