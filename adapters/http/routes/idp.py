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

import base64
import binascii
import functools
import html
import string
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

import attrs
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from strongroom.adapters.http.bodies import is_media_type
from strongroom.adapters.http.context import ApiContext, endpoint, render_json
from strongroom.adapters.http.errors import STATUS_BY_CODE, error_response, retry_after
from strongroom.adapters.http.openapi import (
    FORM,
    HTML,
    OAUTH_ERRORS,
    Auth,
    Routes,
    oauth_responses,
    parameter,
    ref,
)
from strongroom.adapters.http.pages import document, template_text
from strongroom.adapters.identity.builtin import BuiltinIdentityProvider, is_s256_challenge
from strongroom.adapters.identity.builtin import OAuthError as OAuthRefusal
from strongroom.adapters.wire.errors import OAuthError
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

FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
DEVICE_CODE_GRANT_TYPE = DEVICE_CODE_GRANT
MAX_FORM_FIELDS = 32
DECISIONS = {"approve": True, "deny": False}

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
HTML_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'none'; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


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


def _form(ctx: ApiContext) -> dict[str, str]:
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


def _json(data: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        render_json(data), status_code=status, media_type="application/json", headers=headers
    )


def _no_such_route(request: Request, headers: dict[str, str] | None = None) -> Response:
    """The same 404 the router gives for a path it does not know."""
    return error_response(request, 404, "not_found", "no such route", headers=headers)


BASIC_CHALLENGE = {"WWW-Authenticate": 'Basic realm="strongroom"'}


class ClientRefusal(OAuthRefusal):
    """``invalid_client`` for a client that identified itself with HTTP Basic: 401 with a
    ``WWW-Authenticate`` challenge (RFC 6749 section 5.2)."""


def _oauth_error(error: str, description: str, *, basic: bool = False) -> Response:
    """RFC 6749 section 5.2: 400 ``{"error", "error_description"}``, never cached; a client
    that authenticated with HTTP Basic and is refused: 401 with a challenge."""
    if basic:
        headers = {**NO_STORE, **BASIC_CHALLENGE}
        return _json(present(OAuthError(error, description)), 401, headers)  # type: ignore[arg-type]
    return _json(present(OAuthError(error, description)), 400, NO_STORE)  # type: ignore[arg-type]


def _refused(error: OAuthRefusal) -> Response:
    return _oauth_error(error.error, error.description, basic=isinstance(error, ClientRefusal))


OAuthAct = Callable[[BuiltinIdentityProvider, ApiContext, Mapping[str, str]], Awaitable[Any]]


def _oauth_endpoint(act: OAuthAct) -> Callable[[Request], Awaitable[Response]]:
    """An OAuth endpoint answering what ``act`` returns for the form's OAuth parameters:
    refusals in OAuth's format (RFC 6749 section 5.2; a client refused after HTTP Basic:
    401 with a challenge), every reply never cached."""

    @endpoint
    async def run(ctx: ApiContext) -> Response:
        idp = _builtin(ctx)
        if idp is None:
            return _no_such_route(ctx.request, headers=NO_STORE)
        try:
            result = await act(idp, ctx, oauth_parameters(_form(ctx)))
        except InvalidRequestError as error:
            return _oauth_error("invalid_request", error.message)
        except OAuthRefusal as error:
            if error.error == "invalid_client" and "authorization" in ctx.request.headers:
                error = ClientRefusal(error.error, error.description)
            return _refused(error)
        return _json(present(result), 200, NO_STORE)

    async def guarded(request: Request) -> Response:
        try:
            return await run(request)
        except InvalidRequestError as error:  # a body over the cap, refused before the handler
            return _oauth_error("invalid_request", error.message)

    guarded.__name__, guarded.__doc__ = act.__name__, act.__doc__
    return guarded


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


def _builtin(ctx: ApiContext) -> BuiltinIdentityProvider | None:
    identity = ctx.facade.identity
    return identity if isinstance(identity, BuiltinIdentityProvider) else None


@functools.cache
def _template(name: str) -> string.Template:
    """An IdP page's body in the shared document, with the IdP's style inlined."""
    style = f"<style>\n{template_text('idp.css')}</style>"
    return string.Template(document("$title · Strongroom", style, template_text(name)))


@attrs.frozen
class Notice:
    """What a page says above its form (``error`` or ``success``), with the page's status
    and, for a refusal, the error (its ``Retry-After`` goes on the page)."""

    text: str = ""
    kind: str = ""
    status: int = 200
    error: StrongroomError | None = None

    @classmethod
    def of(cls, error: StrongroomError) -> Notice:
        """A refusal as a sentence, with the status its code answers."""
        text = error.message[:1].upper() + error.message[1:] + "."
        return cls(text, "error", STATUS_BY_CODE.get(error.code, 400), error)


def _page(
    ctx: ApiContext,
    name: str,
    words: tuple[str, str],
    values: Mapping[str, str],
    notice: Notice,
    hidden: Mapping[str, bool],
) -> Response:
    """An IdP page: its heading and lead (``words``), the notice and ``values``, every one
    HTML-escaped, each ``hidden`` flag to the ``hidden`` attribute or nothing."""
    heading, lead = words
    shown = {"heading": heading, "lead": lead, "notice": notice.text, **values}
    escaped = {key: html.escape(value, quote=True) for key, value in shown.items()}
    page = _template(name).substitute(
        escaped,
        **{flag: "hidden" if on else "" for flag, on in hidden.items()},
        title=escaped["heading"],
        notice_kind=notice.kind,
        request_id=html.escape(ctx.request_id, quote=True),
    )
    response = HTMLResponse(page, status_code=notice.status, headers=HTML_HEADERS)
    if notice.error is not None:
        response.headers.update(retry_after(notice.error))
    return response


DEVICE_WORDS = (
    "Approve a device",
    "Enter the code shown on your device, then sign in to approve or deny it.",
)


def device_page(
    ctx: ApiContext,
    form: Mapping[str, str],
    notice: Notice = Notice(),
    words: tuple[str, str] = DEVICE_WORDS,
) -> Response:
    """The device page, its form filled from ``form`` (shown unless the notice is a
    success)."""
    values = {"user_code": form.get("user_code", ""), "email": form.get("email", "")}
    hidden = {"form_hidden": notice.kind == "success"}
    return _page(ctx, "device.html", words, values, notice, hidden)


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
        "upstream_unavailable": UPSTREAM,
    },
)
async def idp_signup(ctx: ApiContext) -> Response:
    """Sign up

    Register a local account with the built-in identity provider. Enabled by default in
    the embedded setup, otherwise 404. Errors use the envelope of `/v1`."""
    idp = _builtin(ctx)
    if idp is None or not idp.signup_enabled:
        return _no_such_route(ctx.request)
    form = exact_fields(_form(ctx), ("email", "password", "name"))
    account = await idp.sign_up(form["email"], form["password"], form["name"])
    return _json(present(account, SignupResult), 201, NO_STORE)


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
    if _builtin(ctx) is None:
        return _no_such_route(ctx.request)
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
    idp = _builtin(ctx)
    if idp is None:
        return _no_such_route(ctx.request)
    wants_json = prefers_json(ctx.request.headers.get("accept"))
    form: dict[str, str] = {}
    try:
        form = _form(ctx)
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
        return _json(present(DeviceDecision(outcome)), 200, NO_STORE)  # type: ignore[arg-type]
    if approve:
        words = ("Device approved", "Your device is now signing in.")
        notice = Notice("You can close this window and return to your device.", "success")
    else:
        words = ("Request denied", "The device was not signed in.")
        notice = Notice("You can close this window.", "success")
    return device_page(ctx, {}, notice, words)


# The authorization code grant with PKCE.

AUTHORIZATION_PARAMETERS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
)


class AuthorizationRefusedError(Exception):
    """An authorization request refused. With ``redirect`` (the client and its redirect
    URI are known good), the refusal goes back to the client in the redirect URI's query
    (RFC 6749 section 4.1.2.1); without, it is shown to the person and never redirected."""

    def __init__(self, error: str, description: str, *, redirect: bool) -> None:
        super().__init__(error)
        self.error, self.description, self.redirect = error, description, redirect


def same_origin(uri: str, base_url: str) -> bool:
    """Whether ``uri`` is an absolute URL of the server's own origin (scheme, host and
    port), without a fragment (RFC 6749 section 3.1.2)."""
    try:
        target, base = urlsplit(uri), urlsplit(base_url)
        ports = (target.port, base.port)
    except ValueError:
        return False
    return (
        target.scheme.lower() == base.scheme.lower()
        and (target.hostname or "") == (base.hostname or "")
        and ports[0] == ports[1]
        and not target.fragment
        and "#" not in uri
        and target.path.startswith("/")
    )


def check_authorization_request(params: Mapping[str, str], base_url: str) -> dict[str, str]:
    """The parameters of a valid authorization request; ``AuthorizationRefusedError`` otherwise.
    The client and redirect URI are checked first: until both are known good, nothing is
    redirected anywhere."""
    if params.get("client_id") != WEB_CLIENT_ID:
        raise AuthorizationRefusedError(
            "invalid_client", f"client_id must be {WEB_CLIENT_ID}", redirect=False
        )
    if not same_origin(params.get("redirect_uri", ""), base_url):
        raise AuthorizationRefusedError(
            "invalid_request",
            "redirect_uri must be an absolute URL on this server's own origin",
            redirect=False,
        )
    if params.get("response_type") != "code":
        raise AuthorizationRefusedError(
            "unsupported_response_type", "response_type must be code", redirect=True
        )
    if params.get("code_challenge_method") != "S256":
        raise AuthorizationRefusedError(
            "invalid_request", "code_challenge_method must be S256", redirect=True
        )
    if not is_s256_challenge(params.get("code_challenge", "")):
        raise AuthorizationRefusedError(
            "invalid_request",
            "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)",
            redirect=True,
        )
    if not params.get("state"):
        raise AuthorizationRefusedError("invalid_request", "state is required", redirect=True)
    return {name: params[name] for name in AUTHORIZATION_PARAMETERS}


def _redirect_with(redirect_uri: str, query: Mapping[str, str]) -> Response:
    """303 to ``redirect_uri`` with ``query`` added to its own query string."""
    separator = "&" if urlsplit(redirect_uri).query else "?"
    location = redirect_uri + separator + urlencode(query)
    return RedirectResponse(location, status_code=303, headers=NO_STORE)


def _refusal_response(
    ctx: ApiContext, refusal: AuthorizationRefusedError, params: Mapping[str, str]
) -> Response:
    if refusal.redirect:
        query = {"error": refusal.error, "error_description": refusal.description}
        if params.get("state"):
            query["state"] = params["state"]
        return _redirect_with(params["redirect_uri"], query)
    words = (
        "Sign-in request refused",
        "The application that sent you here made a request this server refuses.",
    )
    notice = Notice(f"{refusal.error}: {refusal.description}.", "error", 400)
    return authorize_page(ctx, {}, notice, words, show_form=False)


AUTHORIZE_WORDS = ("Sign in to Strongroom", "Sign in to continue to the Strongroom dashboard.")


def authorize_page(
    ctx: ApiContext,
    form: Mapping[str, str],
    notice: Notice = Notice(),
    words: tuple[str, str] = AUTHORIZE_WORDS,
    *,
    show_form: bool = True,
) -> Response:
    """The sign-in page of the authorization request, its hidden fields from ``form``."""
    idp = _builtin(ctx)
    values = {
        "email": form.get("email", ""),
        "signup_url": f"{ctx.base_url}/app#/signup",
        **{name: form.get(name, "") for name in AUTHORIZATION_PARAMETERS},
    }
    signup = show_form and idp is not None and idp.signup_enabled
    hidden = {"form_hidden": not show_form, "signup_hidden": not signup}
    return _page(ctx, "authorize.html", words, values, notice, hidden)


@routes.get(
    "/idp/authorize",
    HTML,
    "The sign-in page.",
    parameters=(
        parameter("response_type", "query", "`code`."),
        parameter("client_id", "query", f"`{WEB_CLIENT_ID}`."),
        parameter("redirect_uri", "query", "An absolute URL on this server's own origin."),
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
    - `invalid_request`: an unknown `client_id` or a `redirect_uri` off this origin: an HTML
      page, never a redirect"""
    if _builtin(ctx) is None:
        return _no_such_route(ctx.request)
    params = dict(ctx.request.query_params)
    try:
        checked = check_authorization_request(params, ctx.base_url)
    except AuthorizationRefusedError as refusal:
        return _refusal_response(ctx, refusal, params)
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
    idp = _builtin(ctx)
    if idp is None:
        return _no_such_route(ctx.request)
    form: dict[str, str] = {}
    try:
        form = _form(ctx)
        fields = exact_fields(form, (*AUTHORIZATION_PARAMETERS, "email", "password"))
        try:
            checked = check_authorization_request(fields, ctx.base_url)
        except AuthorizationRefusedError as refusal:
            return _refusal_response(ctx, refusal, fields)
        code = await idp.authorize(
            fields["email"],
            fields["password"],
            code_challenge=checked["code_challenge"],
            redirect_uri=checked["redirect_uri"],
            client_address=client_address(ctx.request),
        )
    except StrongroomError as error:
        return authorize_page(ctx, form, Notice.of(error))
    return _redirect_with(checked["redirect_uri"], {"code": code, "state": checked["state"]})


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
    idp = _builtin(ctx)
    if idp is None:
        return _no_such_route(ctx.request)
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
    return _json(present(metadata), 200, {"Cache-Control": "public, max-age=3600"})
