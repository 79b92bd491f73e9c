"""The error envelope of the API and the mapping of error codes to HTTP statuses."""

from __future__ import annotations

import json
import logging

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from strongroom.adapters.http.shapes import Error, ErrorBody
from strongroom.adapters.http.wire import present
from strongroom.domain.errors import RateLimitedError, StrongroomError

logger = logging.getLogger("strongroom.http")

STATUS_BY_CODE: dict[str, int] = {
    "invalid_request": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "wrong_workspace": 403,
    "not_found": 404,
    "conflict": 409,
    "quota_exceeded": 409,
    "retention_immutable": 409,
    "name_taken": 409,
    "invalid_state": 409,
    "billing_restricted": 409,
    "last_admin": 409,
    "idempotency_conflict": 409,
    "artifact_locked": 409,
    "last_artifact": 409,
    "not_in_our_storage": 409,
    "artifact_missing": 409,
    "validation_failed": 422,
    "lock_exceeds_expiry": 422,
    "precondition_failed": 412,
    "rate_limited": 429,
    "internal": 500,
    "upstream_unavailable": 502,
}

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
        json.dumps(present(Error(error))),
        status_code=status,
        media_type="application/json",
        headers={"X-Request-ID": request_id, **(headers or {})},
    )


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
