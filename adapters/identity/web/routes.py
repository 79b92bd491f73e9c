"""The built-in identity provider's pages and endpoints, outside ``/v1`` and without a bearer.

- ``POST /idp/signup``: self-service registration.
- ``POST /idp/device/code``: the device authorization request (RFC 8628 section 3.1).
- ``GET /idp/device``: the page where a person signs in and approves or denies a user code;
  its form posts to ``POST /idp/device`` (HTML answers, JSON when ``Accept`` prefers it).
- ``GET /idp/authorize``: the authorization request of the authorization-code grant with
  PKCE (RFC 6749 section 4.1, RFC 7636, S256 only) for the dashboard (client
  ``strongroom-web``, a ``redirect_uri`` on the server's own origin): a sign-in page whose
  form posts to ``POST /idp/authorize``, which redirects (303) to ``redirect_uri`` with a
  single-use ``code`` and the request's ``state``.
- ``POST /idp/token``: the device access token request (RFC 8628 section 3.4) and the
  authorization code exchange (RFC 6749 section 4.1.3 with ``code_verifier``), answering
  errors in OAuth's own format (RFC 6749 section 5.2) and never letting a cache keep a reply.

Every request body is a URL-encoded form. Every other error uses the API's nested envelope.
With another identity provider configured, every route here answers 404 ``not_found``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.identity.builtin import OAuthError as OAuthRefusal
from strongroom.adapters.identity.web.oauth import (
    NO_STORE,
    OAUTH_ERRORS,
    ClientRefusal,
    builtin_of,
    client_address,
    client_id_of,
    exact_fields,
    form_of,
    no_such_route,
    oauth_error,
    oauth_parameters,
    oauth_responses,
    prefers_json,
    refused,
    reply,
)
from strongroom.adapters.identity.web.pages import (
    AUTHORIZATION_PARAMETERS,
    AuthorizationRefusedError,
    Notice,
    authorize_page,
    check_authorization_request,
    device_page,
    redirect_with,
    refusal_response,
)
from strongroom.adapters.webkit.context import ApiContext, endpoint
from strongroom.adapters.webkit.declare import FORM, HTML, Auth, Routes, parameter, ref
from strongroom.adapters.wire.idp import (
    AUTHORIZATION_CODE_GRANT,
    DEVICE_CODE_GRANT,
    AccessToken,
    AuthorizationForm,
    AuthorizationServerMetadata,
    DeviceAuthorization,
    DeviceCodeForm,
    DeviceDecision,
    DeviceDecisionForm,
    SignupForm,
    SignupResult,
    TokenForm,
)
from strongroom.adapters.wire.present import present
from strongroom.adapters.wire.scalars import Uri
from strongroom.domain.errors import InvalidRequestError, StrongroomError
from strongroom.domain.oauth import WEB_CLIENT_ID

DEVICE_CODE_GRANT_TYPE = DEVICE_CODE_GRANT
DECISIONS = {"approve": True, "deny": False}


# Forms.


UPSTREAM = "the database or another dependency failed"
RATE_LIMITED = (
    "too many failed attempts for this email from this address, or from this address"
    " (`Retry-After` says when to try again)"
)


def sign_in_form(body: type, invalid: str) -> dict[str, Any]:
    """The declaration of a form where a person signs in: its refusals (``invalid``, the
    sign-in limits, a failing dependency) answer the page again."""
    errors = {
        "invalid_request": invalid,
        "rate_limited": RATE_LIMITED,
        "upstream_unavailable": UPSTREAM,
    }
    return {"body": body, "media_type": FORM, "errors": errors, "html_errors": (400, 429, 502)}


IDP_OFF = "another identity provider is configured (every `/idp` route is 404)"
routes = Routes("Identity provider", auth=Auth.NONE, errors={"not_found": IDP_OFF})


OAuthAct = Callable[[BuiltinIdentityProvider, ApiContext, Mapping[str, str]], Awaitable[Any]]


def _oauth_endpoint(act: OAuthAct) -> Callable[[Request], Awaitable[Response]]:
    """An OAuth endpoint answering what ``act`` returns for the form's OAuth parameters:
    refusals in OAuth's format (RFC 6749 section 5.2; a client refused after HTTP Basic:
    401 with a challenge), every reply never cached."""

    @endpoint
    async def run(ctx: ApiContext) -> Response:
        idp = builtin_of(ctx)
        if idp is None:
            return no_such_route(ctx.request, headers=NO_STORE)
        try:
            result = await act(idp, ctx, oauth_parameters(form_of(ctx)))
        except InvalidRequestError as error:
            return oauth_error("invalid_request", error.message)
        except OAuthRefusal as error:
            if error.error == "invalid_client" and "authorization" in ctx.request.headers:
                error = ClientRefusal(error.error, error.description)
            return refused(error)
        return reply(present(result), 200, NO_STORE)

    async def guarded(request: Request) -> Response:
        try:
            return await run(request)
        except InvalidRequestError as error:  # a body over the cap, refused before the handler
            return oauth_error("invalid_request", error.message)

    guarded.__name__, guarded.__doc__ = act.__name__, act.__doc__
    return guarded


# Endpoints.


@routes.post(
    "/idp/signup",
    SignupResult,
    "The new account.",
    status=201,
    body=SignupForm,
    media_type=FORM,
    errors={
        "invalid_request": (
            "the body is not a URL-encoded form, a field is missing, unknown or repeated, the"
            " email is not an email address, the password is not 8 to 1024 characters, or the"
            " name is invalid"
        ),
        "not_found": (
            "sign-up is off; another identity provider is configured (every `/idp` route is 404)"
        ),
        "name_taken": "an account with this email exists",
        "rate_limited": "too many sign-ups from this client address (50 per 10 minutes)",
        "upstream_unavailable": UPSTREAM,
    },
)
async def idp_signup(ctx: ApiContext) -> Response:
    """Sign up

    Register a local account with the built-in identity provider. Enabled by default in
    the embedded setup, otherwise 404. Errors use the envelope of `/v1`."""
    idp = builtin_of(ctx)
    if idp is None or not idp.signup_enabled:
        return no_such_route(ctx.request)
    form = exact_fields(form_of(ctx), ("email", "password", "name"))
    account = await idp.sign_up(
        form["email"], form["password"], form["name"], client_address(ctx.request)
    )
    return reply(present(account, SignupResult), 201, NO_STORE)


@routes.post(
    "/idp/device/code",
    DeviceAuthorization,
    "The device authorization.",
    body=DeviceCodeForm,
    media_type=FORM,
    errors={
        "upstream_unavailable": UPSTREAM,
    },
    extra_responses=oauth_responses("invalid_request", "invalid_client"),
)
@_oauth_endpoint
async def idp_device_code(
    idp: BuiltinIdentityProvider, ctx: ApiContext, form: Mapping[str, str]
) -> Any:
    """Start a device authorization

    RFC 8628 section 3.1: issue a device code and a user code. The codes live 10
    minutes; poll `POST /idp/token` every `interval` seconds. The client identifies itself
    with `client_id` in the form or as the user name of HTTP Basic with an empty password.
    Unrecognised OAuth parameters (such as `scope`) are ignored, as RFC 6749 section 3.1
    requires; the form schema lists the parameters this endpoint reads. Refusals use
    OAuth's own error format; a failure of the server itself uses the envelope of `/v1`.
    Replies carry `Cache-Control: no-store`."""
    return await idp.start_device_authorization(client_id_of(ctx.request, form), ctx.base_url)


@routes.get(
    "/idp/device",
    HTML,
    "The page.",
    parameters=(
        parameter("user_code", "query", "Pre-fills the code (from `verification_uri_complete`)."),
    ),
)
async def idp_device_page(ctx: ApiContext) -> Response:
    """Device approval page

    An HTML page where a person signs in and approves or denies a user code; its form
    posts to `POST /idp/device`."""
    if builtin_of(ctx) is None:
        return no_such_route(ctx.request)
    return device_page(ctx, {"user_code": ctx.request.query_params.get("user_code", "")})


@routes.post(
    "/idp/device",
    {**HTML, "application/json": {"schema": ref("DeviceDecision")}},
    "The decision is recorded.",
    **sign_in_form(
        DeviceDecisionForm,
        "wrong email or password, unknown or expired user code, a `decision` other than"
        " `approve` or `deny`, or a body that is not a URL-encoded form of exactly these fields",
    ),
)
async def idp_device_decision(ctx: ApiContext) -> Response:
    """Approve or deny a user code

    Signs the person in and records the decision. Answers an HTML page, or JSON when
    `Accept` prefers `application/json`. Failed attempts are limited per user code (5,
    then the code is dead: 400), per email and client address (10 per 15 minutes) and per
    client address (100 per 15 minutes): 429 with `Retry-After`."""
    idp = builtin_of(ctx)
    if idp is None:
        return no_such_route(ctx.request)
    wants_json = prefers_json(ctx.request.headers.get("accept"))
    form: dict[str, str] = {}
    try:
        form = form_of(ctx)
        fields = exact_fields(form, ("user_code", "email", "password", "decision"))
        approve = DECISIONS.get(fields["decision"])
        if approve is None:
            raise InvalidRequestError("decision must be approve or deny")
        await idp.decide(
            fields["user_code"],
            fields["email"],
            fields["password"],
            approve=approve,
            client_address=client_address(ctx.request),
        )
    except StrongroomError as error:
        if wants_json:
            raise
        return device_page(ctx, form, Notice.of(error))
    outcome = "approved" if approve else "denied"
    if wants_json:
        return reply(present(DeviceDecision(outcome)), 200, NO_STORE)  # type: ignore[arg-type]
    if approve:
        words = ("Device approved", "Your device is now signing in.")
        notice = Notice("You can close this window and return to your device.", "success")
    else:
        words = ("Request denied", "The device was not signed in.")
        notice = Notice("You can close this window.", "success")
    return device_page(ctx, {}, notice, words)


@routes.get(
    "/idp/authorize",
    HTML,
    "The sign-in page.",
    parameters=(
        parameter("response_type", "query", "`code`."),
        parameter("client_id", "query", f"`{WEB_CLIENT_ID}`."),
        parameter(
            "redirect_uri",
            "query",
            "An absolute URL on this server's own origin: `/app` or under `/app/`.",
        ),
        parameter("code_challenge", "query", "BASE64URL(SHA256(code_verifier)), 43 characters."),
        parameter("code_challenge_method", "query", "`S256` (the only method offered)."),
        parameter("state", "query", "Opaque; echoed in the redirect."),
    ),
    html_errors=(400,),
    extra_responses={
        "303": {
            "description": (
                "The request is refused in a way the client should know: a redirect to"
                " `redirect_uri` with `error`, `error_description` and `state` (RFC 6749"
                " section 4.1.2.1)."
            ),
            "headers": {"Location": {"schema": {"type": "string", "format": "uri"}}},
        }
    },
)
async def idp_authorize_page(ctx: ApiContext) -> Response:
    """Authorization request (sign-in page)

    RFC 6749 section 4.1.1 with PKCE (RFC 7636, `S256` only), for the dashboard: an HTML
    page where a person signs in; its form posts to `POST /idp/authorize`.

    Errors:
    - `invalid_request`: an unknown `client_id` or a `redirect_uri` off this origin or
      outside `/app/`: an HTML page, never a redirect"""
    if builtin_of(ctx) is None:
        return no_such_route(ctx.request)
    params = dict(ctx.request.query_params)
    try:
        checked = check_authorization_request(params, ctx.base_url)
    except AuthorizationRefusedError as refusal:
        return refusal_response(ctx, refusal, params)
    return authorize_page(ctx, checked)


@routes.post(
    "/idp/authorize",
    None,
    (
        "Signed in: a redirect to `redirect_uri` with `code` (single-use, 60 seconds) and"
        " `state`; or a refusal the client should know, with `error`, `error_description`"
        " and `state` (RFC 6749 section 4.1.2.1)."
    ),
    status=303,
    located="{redirect_uri}?code=...&state=...",
    **sign_in_form(
        AuthorizationForm,
        "wrong email or password (the page again, with the message), an unknown `client_id`,"
        " a `redirect_uri` off this origin, or a body that is not a URL-encoded form of"
        " exactly these fields",
    ),
)
async def idp_authorize(ctx: ApiContext) -> Response:
    """Sign in and authorize

    Checks the email and password and redirects (303) to `redirect_uri` with a
    single-use authorization `code` and the request's `state`. Failed attempts count
    against the limits of device approvals (per email and address, per address)."""
    idp = builtin_of(ctx)
    if idp is None:
        return no_such_route(ctx.request)
    form: dict[str, str] = {}
    try:
        form = form_of(ctx)
        fields = exact_fields(form, (*AUTHORIZATION_PARAMETERS, "email", "password"))
        try:
            checked = check_authorization_request(fields, ctx.base_url)
        except AuthorizationRefusedError as refusal:
            return refusal_response(ctx, refusal, fields)
        code = await idp.authorize(
            fields["email"],
            fields["password"],
            code_challenge=checked["code_challenge"],
            redirect_uri=checked["redirect_uri"],
            client_address=client_address(ctx.request),
        )
    except StrongroomError as error:
        return authorize_page(ctx, form, Notice.of(error))
    return redirect_with(checked["redirect_uri"], {"code": code, "state": checked["state"]})


@routes.post(
    "/idp/token",
    AccessToken,
    "The person approved: an access token.",
    body=TokenForm,
    media_type=FORM,
    errors={
        "upstream_unavailable": UPSTREAM,
    },
    extra_responses=oauth_responses(*OAUTH_ERRORS),
)
@_oauth_endpoint
async def idp_token(idp: BuiltinIdentityProvider, ctx: ApiContext, form: Mapping[str, str]) -> Any:
    """Get an access token

    RFC 8628 section 3.4 (`grant_type` `urn:ietf:params:oauth:grant-type:device_code`,
    polled), or RFC 6749 section 4.1.3 with RFC 7636 (`grant_type` `authorization_code`
    with `code`, `code_verifier` and the `redirect_uri` of the authorization request,
    client `strongroom-web`; a code is single-use and a second exchange revokes the token
    of the first). The client identifies itself with `client_id` in the form or as
    the user name of HTTP Basic with an empty password. Refusals use OAuth's own error
    format (status 400; 401 with a `WWW-Authenticate` challenge for a client refused after
    HTTP Basic); a failure of the server itself uses the envelope of `/v1`. Unrecognised
    OAuth parameters (such as `scope`) are ignored, as RFC 6749 section 3.1 requires; the
    form schema lists the parameters this endpoint reads. Replies carry
    `Cache-Control: no-store`."""
    grant_type = form.get("grant_type")
    if grant_type is None:
        raise OAuthRefusal("invalid_request", "missing parameter grant_type")
    if grant_type == AUTHORIZATION_CODE_GRANT:
        for name in ("code", "code_verifier", "redirect_uri"):
            if name not in form:
                raise OAuthRefusal("invalid_request", f"missing parameter {name}")
        return await idp.exchange_authorization_code(
            form["code"],
            form["code_verifier"],
            form["redirect_uri"],
            client_id_of(ctx.request, form),
        )
    if grant_type != DEVICE_CODE_GRANT_TYPE:
        raise OAuthRefusal(
            "unsupported_grant_type",
            f"grant_type must be {DEVICE_CODE_GRANT_TYPE} or {AUTHORIZATION_CODE_GRANT}",
        )
    if "device_code" not in form:
        raise OAuthRefusal("invalid_request", "missing parameter device_code")
    return await idp.exchange_device_code(form["device_code"], client_id_of(ctx.request, form))


@routes.get(
    "/.well-known/oauth-authorization-server/idp",
    AuthorizationServerMetadata,
    "The metadata.",
    operation_id="getAuthorizationServerMetadataOfIssuer",
)
@routes.get("/.well-known/oauth-authorization-server", AuthorizationServerMetadata, "The metadata.")
async def get_authorization_server_metadata(ctx: ApiContext) -> Response:
    """Authorization server metadata

    RFC 8414: the built-in identity provider's endpoints, grant types and client
    authentication methods, for OAuth clients that discover the server. Served at
    `/.well-known/oauth-authorization-server` and, as RFC 8414 section 3 derives it from
    the issuer `{base}/idp`, at `/.well-known/oauth-authorization-server/idp`.

    Errors:
    - `not_found`: another identity provider is configured"""
    idp = builtin_of(ctx)
    if idp is None:
        return no_such_route(ctx.request)
    config = idp.cli_config(ctx.base_url)
    metadata = AuthorizationServerMetadata(
        issuer=Uri(config.issuer),
        authorization_endpoint=Uri(f"{ctx.base_url}/idp/authorize"),
        device_authorization_endpoint=Uri(config.device_authorization_endpoint),
        token_endpoint=Uri(config.token_endpoint),
        grant_types_supported=[DEVICE_CODE_GRANT_TYPE, AUTHORIZATION_CODE_GRANT],
        response_types_supported=["code"],
        code_challenge_methods_supported=["S256"],
        token_endpoint_auth_methods_supported=["none", "client_secret_basic"],
        scopes_supported=list(config.scopes),
        service_documentation=Uri(f"{ctx.base_url}/docs"),
    )
    return reply(present(metadata), 200, {"Cache-Control": "public, max-age=3600"})
