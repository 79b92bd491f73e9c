"""The error envelope of every failure, and OAuth's own error format."""

from __future__ import annotations

from typing import Literal

import attrs

from strongroom.adapters.wire.views import meta


@attrs.frozen
class ErrorBody:
    """What went wrong."""

    code: str
    """Stable machine-readable code; branch on it, never on `message`. Every code and its status is
    listed under `x-error-codes`."""
    message: str
    """Human-readable; its wording may change."""
    request_id: str
    """Equals the response's `X-Request-ID` header (`req_<uuid>` when generated)."""
    detail: str | None = attrs.field(default=None, metadata=meta(optional=True))
    """Only when the server does not run in production: the underlying failure of a 500 or 502."""


@attrs.frozen
class Error:
    """The error envelope of every failure (except `POST /idp/token`)."""

    error: ErrorBody


@attrs.frozen
class OAuthError:
    """OAuth's own error format, of `POST /idp/token` and `POST /idp/device/code`."""

    error: Literal[
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unsupported_grant_type",
        "authorization_pending",
        "slow_down",
        "expired_token",
        "access_denied",
    ]
    """RFC 6749 / RFC 8628 error code."""
    error_description: str
    """Human-readable explanation."""
