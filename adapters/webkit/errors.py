"""The error envelope of the API and the mapping of error codes to HTTP statuses."""

from __future__ import annotations

import json
import logging
from typing import NamedTuple

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from strongroom.adapters.wire.errors import Error, ErrorBody
from strongroom.adapters.wire.present import present
from strongroom.domain.errors import RateLimitedError, StrongroomError

logger = logging.getLogger("strongroom.http")


class ErrorCode(NamedTuple):
    """An error code of the API: its HTTP status, what it means, an example message."""

    status: int
    meaning: str
    example: str


# Every error code, in the order the reference lists them.
ERROR_CODES: dict[str, ErrorCode] = {
    "invalid_request": ErrorCode(400, "Malformed request.", "unknown field: colour"),
    "unauthenticated": ErrorCode(
        401,
        "No bearer credential, or an invalid, expired or revoked one.",
        "missing, invalid, expired or revoked credential",
    ),
    "forbidden": ErrorCode(
        403,
        "Authenticated but not permitted: a missing permission (the message names it), no "
        "workspace selected, or a machine credential doing what only a person may.",
        "missing permission backups:write",
    ),
    "wrong_workspace": ErrorCode(
        403,
        "A person's credential is scoped to another workspace they belong to.",
        "this credential is scoped to another workspace; switch workspace first",
    ),
    "not_found": ErrorCode(
        404,
        "No such object in the caller's workspace (another workspace's objects look the same).",
        "backup not found",
    ),
    "conflict": ErrorCode(409, "The artifact is already deleted.", "artifact already deleted"),
    "quota_exceeded": ErrorCode(
        409,
        "A limit is reached; the message names the resource and the limit.",
        "quota exceeded: backups_per_workspace is limited to 100",
    ),
    "retention_immutable": ErrorCode(
        409,
        "A different retention policy after one was set.",
        "retention policy is write-once and is already set to another value",
    ),
    "name_taken": ErrorCode(
        409,
        "Duplicate backup name (case-insensitive), role slug or registered email.",
        "a backup named 'nightly' already exists",
    ),
    "invalid_state": ErrorCode(
        409, "The object's state forbids the action.", "backup is paused: resume it first"
    ),
    "billing_restricted": ErrorCode(
        409,
        "The workspace's billing state refuses the write; the message names the state.",
        "workspace billing state is blocked: configuration changes are refused",
    ),
    "last_admin": ErrorCode(
        409, "The last admin cannot be removed or demoted.", "the last admin cannot leave"
    ),
    "idempotency_conflict": ErrorCode(
        409,
        "An `Idempotency-Key` reused with a different request.",
        "this Idempotency-Key was already used with a different request",
    ),
    "artifact_locked": ErrorCode(
        409,
        "An artifact is inside its `lock_for` window.",
        "artifact is locked until 2031-01-01T00:00:00.000Z",
    ),
    "artifact_held": ErrorCode(
        409, "An artifact is under a legal hold.", "artifact is under a legal hold"
    ),
    "artifact_referenced": ErrorCode(
        409,
        "A live snapshot references the artifact.",
        "artifact is referenced by a live snapshot",
    ),
    "last_artifact": ErrorCode(
        409, "The only artifact left for its backup.", "last artifact of the backup"
    ),
    "not_in_our_storage": ErrorCode(
        409,
        "The artifact was delivered only to the customer's own bucket.",
        "artifact is only in the customer's storage",
    ),
    "artifact_missing": ErrorCode(
        409,
        "`confirm` found an announced artifact absent or different in storage.",
        "artifact db.dump is missing from storage",
    ),
    "validation_failed": ErrorCode(
        422,
        "A well-formed value the rules refuse (kind rules of a backup and the like).",
        "schedule is refused on a manual backup",
    ),
    "lock_exceeds_expiry": ErrorCode(
        422,
        "`lock_for` longer than `expire_after`.",
        "lock_for must not be longer than expire_after",
    ),
    "precondition_failed": ErrorCode(
        412,
        "`If-Match` names no tag of the object as it stands: it changed since it was read. "
        "Nothing was changed.",
        "the backup has changed since it was read (If-Match does not match)",
    ),
    "rate_limited": ErrorCode(
        429,
        "Too many failed attempts; retry after the `Retry-After` seconds.",
        "too many failed attempts for this email; wait and retry",
    ),
    "internal": ErrorCode(
        500, "Unhandled server failure; retry with backoff.", "internal error; try again later"
    ),
    "upstream_unavailable": ErrorCode(
        502,
        "A dependency (database, identity provider, billing, storage) failed; usually transient, "
        "retry with backoff.",
        "object storage is unavailable; try again later",
    ),
}
STATUS_BY_CODE: dict[str, int] = {code: entry.status for code, entry in ERROR_CODES.items()}

# Seconds a client should wait before retrying, by code, where a retry makes sense
# (contract 13): a dependency that failed usually answers again after a short wait. A
# rate limit says its own wait (``RateLimitedError.retry_after``).
RETRY_AFTER_BY_CODE: dict[str, int] = {"upstream_unavailable": 5}
UNAVAILABLE_RETRY_AFTER = 5
"""``Retry-After`` of a 503 (``/readyz`` while a dependency does not answer)."""


def request_id_of(request: Request) -> str:
    """The request id the request-id middleware assigned."""
    return str(request.scope.get("state", {}).get("request_id", ""))


def error_response(
    request: Request,
    status: int,
    code: str,
    message: str,
    detail: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A JSON error in the contract's nested format; ``detail`` only outside production."""
    request_id = request_id_of(request)
    production = getattr(request.app.state, "environment", "development") == "production"
    error = ErrorBody(code, message, request_id, None if production else detail)
    return Response(
        _encoded(present(Error(error))),
        status_code=status,
        media_type="application/json",
        headers={"X-Request-ID": request_id, **(headers or {})},
    )


def _encoded(envelope: object) -> bytes:
    """The envelope's JSON: orjson's, or the standard library's for text orjson refuses (a
    lone surrogate that reached a message), so that rendering an error never fails."""
    try:
        return orjson.dumps(envelope)
    except TypeError:
        return json.dumps(envelope).encode()


async def strongroom_error(request: Request, exc: Exception) -> Response:
    """Render a domain or port error."""
    assert isinstance(exc, StrongroomError)
    detail = None
    if exc.__cause__ is not None and exc.code == "upstream_unavailable":
        detail = f"{type(exc.__cause__).__name__}: {exc.__cause__}"
        logger.warning("upstream unavailable: %s", detail)
    headers = retry_after(exc)
    return error_response(request, STATUS_BY_CODE[exc.code], exc.code, exc.message, detail, headers)


def retry_after(exc: StrongroomError) -> dict[str, str]:
    """``Retry-After`` for a refusal after which a retry makes sense (contract 13): a rate
    limit's own wait, or the wait of its code in ``RETRY_AFTER_BY_CODE``."""
    if isinstance(exc, RateLimitedError):
        return {"Retry-After": str(exc.retry_after)}
    seconds = RETRY_AFTER_BY_CODE.get(exc.code)
    return {} if seconds is None else {"Retry-After": str(seconds)}


def allowed_methods(request: Request) -> str:
    """Every method some route serves at the request's path, for a 405's ``Allow`` header.

    Starlette answers 405 from the first route whose path matches, so when several routes
    share a path (one per method), its own ``Allow`` would name only that route's methods.
    """
    methods: set[str] = set()
    for route in getattr(request.app, "routes", []):
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods |= route.methods
    return ", ".join(sorted(methods))


async def http_error(request: Request, exc: Exception) -> Response:
    """Render the router's own refusals (no such route, method not allowed)."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(request, 404, "not_found", "no such route")
    if exc.status_code == 405:
        headers = dict(exc.headers or {})
        allow = allowed_methods(request)
        if allow:
            headers["Allow"] = allow
        return error_response(
            request,
            405,
            "invalid_request",
            f"method {request.method} is not allowed here",
            headers=headers,
        )
    return error_response(request, exc.status_code, "invalid_request", str(exc.detail))


async def client_disconnected(request: Request, exc: Exception) -> Response:
    """A client that went away mid-request (``ClientDisconnect``, raised while its body is
    read or a response streamed): not a failure of ours, so no error and no traceback in the
    logs, only a DEBUG line. The answer is a bare 400 that nobody is left to read."""
    logger.debug("client went away during %s %s", request.method, request.url.path)
    return Response(status_code=400, headers={"X-Request-ID": request_id_of(request)})


async def internal_error(request: Request, exc: Exception) -> Response:
    """Last resort: an unhandled failure is ``internal`` and is logged with its traceback
    (a client that went away is no failure: ``client_disconnected``)."""
    if isinstance(exc, ClientDisconnect):
        return await client_disconnected(request, exc)
    logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(
        request,
        500,
        "internal",
        "internal error; try again later",
        detail=f"{type(exc).__name__}: {exc}",
    )
