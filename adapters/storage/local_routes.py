"""The local-disk storage endpoint, outside ``/v1``: presigned PUT and GET of objects.

Served only when the facade's storage is ``LocalDiskStorage``; with S3 the presigned URLs
point at S3 itself and this path answers 404. Bodies stream: a PUT is written chunk by
chunk to a temporary file, a GET is sent from the file in chunks.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from strongroom.adapters.storage.disposition import content_disposition
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.storage.local_parts import StorageRefusalError
from strongroom.adapters.webkit.context import json_response
from strongroom.adapters.webkit.declare import BINARY, Auth, Routes, parameter
from strongroom.adapters.webkit.errors import error_response
from strongroom.adapters.wire.system import StoredResult
from strongroom.ports.driving import Strongroom

_CODES = {400: "invalid_request", 403: "forbidden", 404: "not_found"}


SIGNATURE = {
    **parameter(
        "signature", "query", "With `expires`, `size`, `sha256`, `upload_id`, `part`: as presigned."
    ),
    "required": True,
}
routes = Routes(
    "Storage",
    auth=Auth.NONE,
    parameters=(SIGNATURE,),
    errors={
        "invalid_request": "a malformed key, or a body of another size or sha256 than signed",
        "not_found": "no such object or upload",
    },
)


def _refused(request: Request, refusal: StorageRefusalError) -> Response:
    return error_response(request, refusal.status, _CODES[refusal.status], refusal.message)


def _storage(request: Request) -> LocalDiskStorage | None:
    facade: Strongroom = request.state.facade
    storage = facade.storage
    return storage if isinstance(storage, LocalDiskStorage) else None


@routes.put(
    "/storage/{key:path}",
    StoredResult,
    "Stored.",
    body={"type": "string", "format": "binary"},
    media_type="application/octet-stream",
)
async def put_object(request: Request) -> Response:
    """Upload to a presigned URL

    Local-disk storage only: the body is streamed to disk and checked against the signed
    size (and sha256); a locked object is never overwritten.

    Errors:
    - `forbidden`: a signature that does not match, or an expired URL; the object is locked"""
    storage = _storage(request)
    if storage is None:
        return error_response(request, 404, "not_found", "no such object")
    try:
        grant = storage.verify("PUT", request.path_params["key"], dict(request.query_params))
        writer = storage.open_writer(grant)
    except StorageRefusalError as refusal:
        return _refused(request, refusal)
    try:
        async for chunk in request.stream():
            writer.write(chunk)
        await run_in_threadpool(writer.finish)
    except StorageRefusalError as refusal:
        writer.abort()
        return _refused(request, refusal)
    except BaseException:
        writer.abort()
        raise
    return json_response({"status": "stored"})


@routes.get("/storage/{key:path}", BINARY, "The bytes.")
async def get_object(request: Request) -> Response:
    """Download from a presigned URL

    Local-disk storage only: the object's bytes, streamed.

    Errors:
    - `forbidden`: a signature that does not match, or an expired URL"""
    storage = _storage(request)
    if storage is None:
        return error_response(request, 404, "not_found", "no such object")
    try:
        grant = storage.verify("GET", request.path_params["key"], dict(request.query_params))
    except StorageRefusalError as refusal:
        return _refused(request, refusal)
    path = storage.object_path(grant.key)
    if await storage.stat(grant.key) is None or not path.is_file():
        return error_response(request, 404, "not_found", "no such object")
    named = grant.filename
    headers = None if named is None else {"Content-Disposition": content_disposition(named)}
    return FileResponse(path, media_type="application/octet-stream", headers=headers)
