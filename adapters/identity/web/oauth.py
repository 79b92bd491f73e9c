"""What the built-in identity provider's endpoints share: reading URL-encoded forms,
identifying the public client (RFC 6749 section 2.3.1), content negotiation, and the
answers in OAuth's error format (RFC 6749 section 5.2) or the API's envelope, with the
OAuth refusals the OpenAPI document shows."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from urllib.parse import parse_qs, unquote_plus

from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.identity.builtin import OAuthError as OAuthRefusal
from strongroom.adapters.webkit.bodies import is_media_type
from strongroom.adapters.webkit.context import ApiContext, render_json
from strongroom.adapters.webkit.declare import NO_STORE_HEADER, REQUEST_ID_HEADER, Json, ref
from strongroom.adapters.webkit.errors import error_response
from strongroom.adapters.wire.errors import OAuthError
from strongroom.adapters.wire.idp import DEVICE_CODE_GRANT
from strongroom.adapters.wire.present import present
from strongroom.domain.errors import InvalidRequestError

FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 32

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def parse_form(body: bytes, content_type: str | None) -> dict[str, str]:
    """A URL-encoded form, each parameter once; ``invalid_request`` otherwise."""
    if not is_media_type(content_type, FORM_MEDIA_TYPE):
        raise InvalidRequestError(f"Content-Type must be {FORM_MEDIA_TYPE}")
    try:
        parsed = parse_qs(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            errors="strict",
            max_num_fields=MAX_FORM_FIELDS,
        )
    except ValueError as error:  # UnicodeDecodeError too
        raise InvalidRequestError("the body is not a well-formed UTF-8 URL-encoded form") from error
    form: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) > 1:
            raise InvalidRequestError(f"parameter {_shown(name)} is repeated")
        form[name] = values[0]
    return form


def exact_fields(form: Mapping[str, str], names: tuple[str, ...]) -> dict[str, str]:
    """Exactly the parameters ``names`` (blank values allowed), nothing else."""
    unknown = [name for name in form if name not in names]
    if unknown:
        raise InvalidRequestError(f"unknown field {_shown(unknown[0])}")
    missing = [name for name in names if name not in form]
    if missing:
        raise InvalidRequestError(f"missing field {missing[0]}")
    return {name: form[name] for name in names}


def oauth_parameters(form: Mapping[str, str]) -> dict[str, str]:
    """OAuth's reading of a form (RFC 6749 section 3.2): a parameter without a value is
    omitted, unrecognised parameters are ignored by the caller."""
    return {name: value for name, value in form.items() if value}


def _shown(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:40] + "...")


def form_of(ctx: ApiContext) -> dict[str, str]:
    return parse_form(ctx.body, ctx.request.headers.get("content-type"))


# Content negotiation.


def _quality(accept: str, media_type: str) -> float:
    """The q-value ``accept`` gives ``media_type``: its most specific matching range wins."""
    family = media_type.partition("/")[0]
    specificity, quality = -1, 0.0
    for item in accept.split(","):
        pattern, *params = (part.strip().lower() for part in item.split(";"))
        rank = {media_type: 2, f"{family}/*": 1, "*/*": 0}.get(pattern)
        if rank is None or rank <= specificity:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        specificity, quality = rank, (q if 0.0 <= q <= 1.0 else 0.0)
    return quality


def prefers_json(accept: str | None) -> bool:
    """Whether ``Accept`` ranks ``application/json`` above ``text/html`` (ties go to HTML)."""
    if not accept:
        return False
    return _quality(accept, "application/json") > _quality(accept, "text/html")


# Responses.


def reply(data: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        render_json(data), status_code=status, media_type="application/json", headers=headers
    )


def no_such_route(request: Request, headers: dict[str, str] | None = None) -> Response:
    """The same 404 the router gives for a path it does not know."""
    return error_response(request, 404, "not_found", "no such route", headers=headers)


BASIC_CHALLENGE = {"WWW-Authenticate": 'Basic realm="strongroom"'}


class ClientRefusal(OAuthRefusal):
    """``invalid_client`` for a client that identified itself with HTTP Basic: 401 with a
    ``WWW-Authenticate`` challenge (RFC 6749 section 5.2)."""


def oauth_error(error: str, description: str, *, basic: bool = False) -> Response:
    """RFC 6749 section 5.2: 400 ``{"error", "error_description"}``, never cached; a client
    that authenticated with HTTP Basic and is refused: 401 with a challenge."""
    if basic:
        headers = {**NO_STORE, **BASIC_CHALLENGE}
        return reply(present(OAuthError(error, description)), 401, headers)  # type: ignore[arg-type]
    return reply(present(OAuthError(error, description)), 400, NO_STORE)  # type: ignore[arg-type]


def refused(error: OAuthRefusal) -> Response:
    return oauth_error(error.error, error.description, basic=isinstance(error, ClientRefusal))


def client_id_of(request: Request, form: Mapping[str, str]) -> str:
    """The public client's id: the form's ``client_id``, or the user name of HTTP Basic with
    an empty password (RFC 6749 section 2.3.1, both form-encoded); both: they must agree."""
    in_body = form.get("client_id")
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        if in_body is None:
            raise OAuthRefusal("invalid_request", "missing parameter client_id")
        return in_body
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ClientRefusal("invalid_client", "malformed HTTP Basic credentials") from None
    user, colon, password = decoded.partition(":")
    if not colon or not user:
        raise ClientRefusal("invalid_client", "malformed HTTP Basic credentials")
    if unquote_plus(password):
        raise ClientRefusal("invalid_client", "a public client has no secret: leave it empty")
    client_id = unquote_plus(user)
    if in_body is not None and in_body != client_id:
        raise OAuthRefusal("invalid_request", "client_id differs from the HTTP Basic user name")
    return client_id


def client_address(request: Request) -> str:
    """The address sign-in limits count failures by: the peer as the ASGI server reports it
    (behind a reverse proxy, run the server so that it trusts the proxy's forwarded-for
    header, e.g. uvicorn's ``--forwarded-allow-ips``)."""
    return request.client.host if request.client is not None else ""


def builtin_of(ctx: ApiContext) -> BuiltinIdentityProvider | None:
    identity = ctx.facade.identity
    return identity if isinstance(identity, BuiltinIdentityProvider) else None


OAUTH_ERRORS: dict[str, str] = {
    "invalid_request": "A parameter is missing or repeated, or the body is not a URL-encoded form.",
    "invalid_client": "The client is not `strongroom-cli`, or HTTP Basic credentials carry a "
    "secret or are malformed.",
    "unsupported_grant_type": f"`grant_type` is not `{DEVICE_CODE_GRANT}`.",
    "invalid_grant": "Unknown device code (or another client's), or one already used.",
    "authorization_pending": "The person has not decided yet; poll again after `interval`.",
    "slow_down": "Polled sooner than `interval` after the previous poll; the interval grows "
    "by 5 seconds.",
    "expired_token": "The device code expired (after 10 minutes); start again.",
    "access_denied": "The person denied the request (or too many wrong passwords).",
}


def oauth_responses(*codes: str) -> Json:
    """The OAuth error responses (RFC 6749 section 5.2) of an endpoint that can answer
    ``codes``: 400, and 401 with a challenge when ``invalid_client`` follows HTTP Basic."""

    def content(shown: list[str]) -> Json:
        return {
            "application/json": {
                "schema": ref("OAuthError"),
                "examples": {
                    code: {
                        "summary": OAUTH_ERRORS[code],
                        "value": {"error": code, "error_description": OAUTH_ERRORS[code]},
                    }
                    for code in shown
                },
            }
        }

    headers = {"X-Request-ID": REQUEST_ID_HEADER, "Cache-Control": NO_STORE_HEADER}
    responses: Json = {
        "400": {
            "description": "OAuth error:\n\n"
            + "\n".join(f"- `{code}`: {OAUTH_ERRORS[code]}" for code in codes),
            "headers": headers,
            "content": content(list(codes)),
        }
    }
    if "invalid_client" in codes:
        responses["401"] = {
            "description": "OAuth error `invalid_client` for a client that sent HTTP Basic "
            "credentials (a secret, or a malformed header).",
            "headers": {**headers, "WWW-Authenticate": {"schema": {"type": "string"}}},
            "content": content(["invalid_client"]),
        }
    return responses
