"""Errors the client raises: one ``ApiError`` family, a subclass per kind of answer.

Every error carries the API's ``code`` and ``message``, the ``request_id`` to quote to
support (the response's, or the one the client sent when no response came), and the
HTTP ``status`` (0 when the server could not be reached).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """The API refused a request (or could not be reached); see ``code`` and ``message``."""

    def __init__(
        self, code: str, message: str, request_id: str | None, status: int, detail: Any = None
    ) -> None:
        super().__init__(f"{code}: {message}" + (f" (request {request_id})" if request_id else ""))
        self.code = code
        self.message = message
        self.request_id = request_id
        self.status = status
        self.detail = detail


class ConnectionFailedError(ApiError):
    """The server could not be reached, even after the retries (``status`` 0)."""


class BadRequestError(ApiError):
    """400: the request is malformed (``invalid_request``)."""


class AuthenticationError(ApiError):
    """401: the credential is missing, unknown, expired or revoked."""


class PermissionDeniedError(ApiError):
    """403: the credential lacks a permission, or a workspace must be selected first."""


class NotFoundError(ApiError):
    """404: no such object visible to this credential."""


class ConflictError(ApiError):
    """409: the object's state, billing, quota or a name forbids the request."""


class ValidationFailedError(ApiError):
    """422: a well-formed value the rules refuse (``validation_failed``)."""


class RateLimitedError(ApiError):
    """429: too many requests; retried after ``Retry-After`` before being raised."""


class ServerError(ApiError):
    """5xx: the server or a dependency failed; retried (502, 503) before being raised."""


class OAuthError(ApiError):
    """An OAuth endpoint's refusal (``authorization_pending``, ``slow_down``, ...)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationFailedError,
    429: RateLimitedError,
}


def error_for(status: int, body: Any, request_id: str | None) -> ApiError:
    """The exception for an error answer: the contract's ``{"error": {...}}`` envelope,
    OAuth's ``{error, error_description}``, or anything else (a proxy's page)."""
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict) and "code" in envelope:
        cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
        return cls(
            str(envelope["code"]),
            str(envelope.get("message", "")),
            str(envelope.get("request_id") or request_id or "") or None,
            status,
            envelope.get("detail"),
        )
    if isinstance(envelope, str):
        description = body.get("error_description", envelope)
        return OAuthError(envelope, str(description), request_id, status)
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(f"http_{status}", f"unexpected HTTP {status} answer", request_id, status)
