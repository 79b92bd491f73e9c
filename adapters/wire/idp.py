"""The built-in identity provider's forms (URL-encoded) and JSON answers."""

from __future__ import annotations

from typing import Any, ClassVar, Literal
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Email, Name, Uri
from strongroom.adapters.wire.views import meta, write_only
from strongroom.domain.oauth import (
    CLIENT_ID,
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    WEB_CLIENT_ID,
)

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
AUTHORIZATION_CODE_GRANT = "authorization_code"


@attrs.frozen
class SignupForm:
    """`POST /idp/signup`."""

    email: Email
    password: str = attrs.field(
        metadata=write_only(minLength=MIN_PASSWORD_LENGTH, maxLength=MAX_PASSWORD_LENGTH)
    )
    name: Name


@attrs.frozen
class SignupResult:
    """The new account."""

    __location__: ClassVar[str] = "/v1/me"

    user_id: UUID = attrs.field(metadata=meta(get="id"))
    email: Email


CLIENT_ID_FIELD: Any = attrs.field(
    default=None,
    metadata=meta(
        "The public client's id; or sent as the user name of HTTP Basic with an empty "
        "password (RFC 6749 section 2.3.1).",
        schema={"const": CLIENT_ID},
    ),
)


@attrs.frozen
class DeviceCodeForm:
    """`POST /idp/device/code`."""

    __ignores_unknown__: ClassVar[bool] = True  # OAuth ignores unrecognised parameters

    client_id: str | None = CLIENT_ID_FIELD


# The view of a class outside the domain: bound in adapters/http/bindings.py.
@attrs.frozen
class DeviceAuthorization:
    """RFC 8628 section 3.2."""

    device_code: str = attrs.field(repr=False)
    """Secret of the polling client."""
    user_code: str = attrs.field(
        metadata=meta(
            schema={
                "pattern": "^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$",
                "examples": ["WDJB-MJHT"],
            }
        )
    )
    """8 letters shown as `XXXX-XXXX`."""
    verification_uri: Uri
    verification_uri_complete: Uri
    expires_in: int
    """Seconds (600)."""
    interval: int
    """Seconds between polls (5)."""


@attrs.frozen
class DeviceDecisionForm:
    """`POST /idp/device`."""

    user_code: str = attrs.field(metadata=meta(schema={"minLength": 1}))
    """Case and hyphens do not matter."""
    email: Email
    password: str = attrs.field(metadata=write_only(minLength=1))
    decision: Literal["approve", "deny"]


@attrs.frozen
class DeviceDecision:
    """The JSON answer (with `Accept: application/json`)."""

    status: Literal["approved", "denied"]


@attrs.frozen
class TokenForm:
    """`POST /idp/token`."""

    __ignores_unknown__: ClassVar[bool] = True  # OAuth ignores unrecognised parameters
    grant_type: str = attrs.field(
        metadata=meta(schema={"enum": [DEVICE_CODE_GRANT, AUTHORIZATION_CODE_GRANT]})
    )
    device_code: str | None = attrs.field(default=None, metadata=meta(schema={"minLength": 1}))
    """The device grant's device code."""
    code: str | None = attrs.field(default=None, metadata=meta(schema={"minLength": 1}))
    """`authorization_code`: the code of the redirect (single-use, 60 seconds)."""
    code_verifier: str | None = attrs.field(
        default=None,
        metadata=meta(
            schema={
                "pattern": "^[A-Za-z0-9._~-]{43,128}$",
                "examples": ["dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"],  # RFC 7636 B
            }
        ),
    )
    """`authorization_code`: the PKCE verifier (RFC 7636), 43 to 128 characters."""
    redirect_uri: str | None = attrs.field(
        default=None, metadata=meta(schema={"examples": ["http://127.0.0.1:8080/app"]})
    )
    """`authorization_code`: the `redirect_uri` of the authorization request."""
    client_id: str | None = attrs.field(
        default=None, metadata=meta(schema={"enum": [CLIENT_ID, WEB_CLIENT_ID]})
    )
    """The public client's id (`strongroom-cli` for the device grant, `strongroom-web` for the
    authorization code); or sent as the user name of HTTP Basic with an empty password (RFC
    6749 section 2.3.1)."""


@attrs.frozen
class AuthorizationForm:
    """`POST /idp/authorize`: the authorization request's parameters and the sign-in."""

    response_type: Literal["code"]
    client_id: str = attrs.field(metadata=meta(schema={"const": WEB_CLIENT_ID}))
    redirect_uri: str = attrs.field(
        metadata=meta(schema={"examples": ["http://127.0.0.1:8080/app"]})
    )
    """On this server's own origin."""
    code_challenge: str = attrs.field(
        metadata=meta(
            schema={
                "pattern": "^[A-Za-z0-9_-]{43}$",
                "examples": ["E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],  # RFC 7636 B
            }
        )
    )
    code_challenge_method: Literal["S256"]
    state: str = attrs.field(metadata=meta(schema={"minLength": 1}))
    email: Email
    password: str = attrs.field(metadata=write_only(minLength=1))


# The view of a class outside the domain: bound in adapters/http/bindings.py.
@attrs.frozen
class AccessToken:
    """An identity provider access token."""

    access_token: str = attrs.field(repr=False)
    """Accepted only by `POST /v1/auth/sessions`, never as a `/v1` bearer."""
    token_type: Literal["Bearer"]
    expires_in: int
    """Seconds."""


@attrs.frozen
class AuthorizationServerMetadata:
    """RFC 8414 authorization server metadata of the built-in identity provider."""

    issuer: Uri
    authorization_endpoint: Uri
    device_authorization_endpoint: Uri
    token_endpoint: Uri
    grant_types_supported: list[str]
    response_types_supported: list[str]
    """`code`: the authorization code grant, with PKCE."""
    code_challenge_methods_supported: list[str]
    """`S256` only (RFC 7636)."""
    token_endpoint_auth_methods_supported: list[str]
    """`none` (`client_id` in the form) or `client_secret_basic` with an empty secret."""
    scopes_supported: list[str]
    service_documentation: Uri
