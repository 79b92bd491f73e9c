"""Artifacts: upload URLs, confirmation, list, download URLs, delete."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.responses import Response

from strongroom.adapters.webkit.context import ApiContext, answer, json_response
from strongroom.adapters.webkit.declare import Named, Paged, Routes, parameter
from strongroom.adapters.wire.artifacts import (
    Artifact,
    BatchDownload,
    Download,
    Downloads,
    DownloadsRequest,
    MultipartUpload,
    SingleUpload,
    UploadPart,
    UploadPlan,
    UploadPlans,
    UploadRequest,
    UploadsRequest,
)
from strongroom.adapters.wire.converter import timestamp
from strongroom.adapters.wire.present import present
from strongroom.adapters.wire.runs import ConfirmRequest, Run
from strongroom.domain.artifacts import Artifact as DomainArtifact
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Page
from strongroom.domain.runs import Run as DomainRun
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.artifacts import (
    CONFIRM_RUN,
    DELETE_ARTIFACT,
    DOWNLOAD_ARTIFACT,
    LIST_ARTIFACTS,
    REQUEST_UPLOAD,
    VERIFY_ARTIFACT,
)

routes = Routes("Runs and artifacts")


def absolute(url: str, base_url: str) -> str:
    """A presigned URL; the local-disk storage's paths are resolved against ``base_url``."""
    return base_url + url if url.startswith("/") else url


def presented_plan(plan: Any, base_url: str) -> Any:
    """One upload plan's JSON: one presigned PUT, or the parts of a multipart upload."""
    if plan.request is not None:
        return present(plan, SingleUpload, url=absolute(plan.request.url, base_url))
    parts = [
        present(part, UploadPart, url=absolute(part.request.url, base_url)) for part in plan.parts
    ]
    return present(plan, MultipartUpload, parts=parts)


def upload_plan(plan: Any, base_url: str) -> Response:
    """``upload-url``: one presigned PUT, or the parts of a multipart upload."""
    return json_response(presented_plan(plan, base_url), 201)


@routes.post(
    "/v1/runs/{run_id}/upload-url",
    Named("UploadPlan", UploadPlan),
    "The upload plan.",
    REQUEST_UPLOAD,
    status=201,
    billing="uploads",
    no_store=True,
    located="/v1/runs/{run_id}",
)
async def request_upload(
    ctx: ApiContext, grant: Grant, run_id: UUID, body: UploadRequest
) -> Response:
    """Presign an artifact's upload

    Announces an artifact of the run (state `pending`) and presigns its upload: one PUT
    below the multipart threshold (`STRONGROOM_MULTIPART_THRESHOLD`, 64 MiB by default),
    otherwise one PUT per 16 MiB part. URLs live 15 minutes. Asking again for the same
    name, size and sha256 gives the same artifact, fresh URLs and the parts already
    stored.

    Errors:
    - `invalid_request`: `size` out of range, `sha256` not 64 hex digits
    - `quota_exceeded`: `storage_bytes` would be passed
    - `invalid_state`: the run is finished, or the name is announced with another size or sha256
    - `upstream_unavailable`: the database or object storage failed; nothing was recorded"""
    plan = await ctx.facade.artifacts.upload_url(grant, run_id, body.name, body.size, body.sha256)
    return upload_plan(plan, ctx.base_url)


@routes.post(
    "/v1/runs/{run_id}/upload-urls",
    UploadPlans,
    "The upload plans, in the order asked.",
    REQUEST_UPLOAD,
    status=201,
    billing="uploads",
    no_store=True,
    located="/v1/runs/{run_id}",
)
async def request_uploads(
    ctx: ApiContext, grant: Grant, run_id: UUID, body: UploadsRequest
) -> Response:
    """Presign many artifacts' uploads

    `upload-url` for each of 1 to 1000 artifacts of the run, in one request: the same
    permission, order of checks and rules, each artifact as if asked alone (the quota
    counts them together). One refused artifact refuses the whole request, and then
    nothing is announced.

    Errors:
    - `invalid_request`: no artifacts or more than 1000, a `size` out of range, a `sha256`
      not 64 hex digits
    - `quota_exceeded`: `storage_bytes` would be passed
    - `invalid_state`: the run is finished, or a name is announced (or asked twice) with
      another size or sha256
    - `upstream_unavailable`: the database or object storage failed; nothing was recorded"""
    items = [(item.name, item.size, item.sha256) for item in body.artifacts]
    plans = await ctx.facade.transfers.upload_urls(grant, run_id, items)
    return json_response({"data": [presented_plan(plan, ctx.base_url) for plan in plans]}, 201)


@routes.post(
    "/v1/runs/{run_id}/confirm",
    Run,
    "The succeeded run.",
    CONFIRM_RUN,
    billing="uploads",
    body_required=False,
)
async def confirm_run(
    facade: Strongroom, grant: Grant, run_id: UUID, body: ConfirmRequest
) -> DomainRun:
    """Confirm a run's artifacts

    Checks every announced artifact in storage (present, same size, same sha256) and
    joins multipart uploads; all become `available` (locked and expiring per the
    backup's retention) and the run `succeeded`, or nothing changes. A snapshot names in
    `references` the artifacts of earlier runs of its backup that it uses: each is then
    locked at least as long as this run (its record and the storage's own lock, never
    shortened), and cannot be deleted while this run is live. The body is optional.

    Errors:
    - `not_found`: a referenced artifact is unknown, of another backup, or of this run
    - `invalid_state`: the run is finished; a referenced artifact is deleted or not confirmed
      (the message names it)
    - `artifact_missing`: an announced artifact is absent or different
    - `upstream_unavailable`: the database or object storage failed; nothing was recorded"""
    return await facade.artifacts.confirm(grant, run_id, body.references)


@routes.get(
    "/v1/workspaces/{wid}/artifacts",
    Paged(Artifact),
    "One page of artifacts.",
    LIST_ARTIFACTS,
    parameters=(
        parameter(
            "state",
            "query",
            "`deleted` lists only deleted artifacts.",
            {"type": "string", "enum": ["deleted"]},
        ),
    ),
)
async def list_artifacts(ctx: ApiContext, grant: Grant, wid: UUID) -> Page[DomainArtifact]:
    """List artifacts

    The workspace's artifacts, newest first; deleted ones only with `?state=deleted`.
    Never refused for billing.

    Errors:
    - `invalid_request`: `state` is not `deleted`"""
    state = ctx.request.query_params.get("state")
    if state not in (None, "deleted"):
        raise InvalidRequestError("state must be deleted (or left out)")
    return await ctx.facade.artifacts.list_in(grant, wid, state == "deleted", ctx.page())


@routes.get("/v1/artifacts/{aid}", Artifact, "The artifact.", LIST_ARTIFACTS)
async def get_artifact(facade: Strongroom, grant: Grant, aid: UUID) -> DomainArtifact:
    """Get an artifact

    One artifact of the workspace as the list shows it, whatever its state (deleted ones
    included). Another workspace's artifact is not found. Needs `artifacts:read`."""
    return await facade.artifacts.get(grant, aid)


@routes.action(
    "/v1/artifacts/{aid}/download-url", Download, "The presigned download.", DOWNLOAD_ARTIFACT
)
async def request_download(ctx: ApiContext, grant: Grant, aid: UUID) -> Response:
    """Presign an artifact's download

    A presigned GET (15 minutes) of an available artifact in service storage; the bytes
    come from storage. Never refused for billing.

    Errors:
    - `conflict`: the artifact is deleted
    - `not_in_our_storage`: the artifact went only to a customer bucket
    - `invalid_state`: the artifact is not confirmed yet"""
    request, expires_at = await ctx.facade.artifacts.download_url(grant, aid)
    url, expires = absolute(request.url, ctx.base_url), timestamp(expires_at)
    return answer(request, 200, Download, url=url, expires_at=expires)


@routes.post(
    "/v1/artifacts/download-urls",
    Downloads,
    "A presigned download of each artifact, in the order asked.",
    DOWNLOAD_ARTIFACT,
)
async def request_downloads(ctx: ApiContext, grant: Grant, body: DownloadsRequest) -> Response:
    """Presign many artifacts' downloads

    `download-url` for each of 1 to 1000 artifacts, in one request (15 minutes each);
    presigned GETs honour `Range: bytes=a-b`. Never refused for billing.

    Errors:
    - `invalid_request`: no ids or more than 1000
    - `not_found`: an artifact is unknown (or of another workspace): the whole request
    - `conflict`: an artifact is deleted
    - `not_in_our_storage`: an artifact went only to a customer bucket
    - `invalid_state`: an artifact is not confirmed yet"""
    downloads = await ctx.facade.transfers.download_urls(grant, body.artifact_ids)
    data = [
        present(
            each,
            BatchDownload,
            url=absolute(each.request.url, ctx.base_url),
            expires_at=timestamp(each.expires_at),
        )
        for each in downloads
    ]
    return json_response({"data": data})


@routes.action(
    "/v1/artifacts/{aid}/verify",
    Artifact,
    "The artifact, its verification `pending` until its bytes are re-read.",
    VERIFY_ARTIFACT,
    status=202,
    located="/v1/artifacts/{aid}",
    errors={
        "conflict": "the artifact is deleted",
        "invalid_state": "the artifact is not confirmed yet",
    },
)
async def verify_artifact(facade: Strongroom, grant: Grant, aid: UUID) -> DomainArtifact:
    """Verify an artifact

    Asks the service to re-read the artifact's bytes from storage and compare their sha256
    with the recorded one. Answers at once with the artifact, its `verification` now
    `pending`; within `STRONGROOM_VERIFY_PENDING_INTERVAL` seconds (10 by default) the
    verifier records `verified_at` and `verification`: `ok`, `mismatch` or `missing`,
    audited as `artifact.verify`. Never refused for billing."""
    return await facade.artifacts.request_verification(grant, aid)


@routes.delete("/v1/artifacts/{aid}", "Deleted.", DELETE_ARTIFACT, billing="config")
async def delete_artifact(facade: Strongroom, grant: Grant, aid: UUID) -> None:
    """Delete an artifact

    Removes the object; the record stays as `deleted`. Precedence: already deleted,
    inside its lock, held, referenced by a live snapshot, last of its backup.

    Errors:
    - `conflict`: already deleted
    - `artifact_locked`: inside its lock window (storage refuses too)
    - `artifact_held`: under a legal hold
    - `artifact_referenced`: a live snapshot (a run of its backup that still has an available
      artifact) references it
    - `last_artifact`: the only available artifact of its backup
    - `upstream_unavailable`: the database or object storage failed; nothing was recorded"""
    await facade.artifacts.delete(grant, aid)
