"""The built-in identity provider's HTML pages: the device approval page and the sign-in
page of the authorization code grant, each in the shared document layout with the
provider's style inlined, and the checks of an authorization request (RFC 6749 section
4.1.1 with PKCE) that decide whether a refusal may be redirected to the client."""

from __future__ import annotations

import functools
import html
import string
from collections.abc import Mapping
from importlib import resources
from urllib.parse import urlencode, urlsplit

import attrs
from starlette.responses import HTMLResponse, RedirectResponse, Response

from strongroom.adapters.identity.builtin import is_s256_challenge
from strongroom.adapters.identity.web.oauth import NO_STORE, builtin_of
from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.errors import STATUS_BY_CODE, retry_after
from strongroom.adapters.webkit.pages import document
from strongroom.domain.errors import StrongroomError
from strongroom.domain.oauth import WEB_CLIENT_ID

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


@functools.cache
def _template(name: str) -> string.Template:
    """An IdP page's body in the shared document, with the IdP's style inlined."""
    style = f"<style>\n{_text('idp.css')}</style>"
    return string.Template(document("$title · Strongroom", style, _text(name)))


@functools.cache
def _text(name: str) -> str:
    """A file of ``templates/`` beside this module (read once)."""
    source = resources.files("strongroom.adapters.identity.web").joinpath(f"templates/{name}")
    return source.read_text(encoding="utf-8")


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


def page(
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
    values = {
        "user_code": form.get("user_code", ""),
        "email": form.get("email", ""),
        "signup_url": "/app#/signup",
    }
    idp = builtin_of(ctx)
    signup = notice.kind != "success" and idp is not None and idp.signup_enabled
    hidden = {"form_hidden": notice.kind == "success", "signup_hidden": not signup}
    return page(ctx, "device.html", words, values, notice, hidden)


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


DASHBOARD = "/app"


def in_dashboard(uri: str) -> bool:
    """Whether ``uri``'s path is the dashboard's (``/app`` or under ``/app/``), with no
    segment that could climb out of it once decoded (contract section 13)."""
    path = urlsplit(uri).path
    if path != DASHBOARD and not path.startswith(DASHBOARD + "/"):
        return False
    lowered = path.lower()
    return (
        "\\" not in path
        and "%2e" not in lowered
        and "%2f" not in lowered
        and (".." not in path.split("/"))
    )


def check_authorization_request(params: Mapping[str, str], base_url: str) -> dict[str, str]:
    """The parameters of a valid authorization request; ``AuthorizationRefusedError`` otherwise.
    The client and redirect URI are checked first: until both are known good, nothing is
    redirected anywhere."""
    if params.get("client_id") != WEB_CLIENT_ID:
        raise AuthorizationRefusedError(
            "invalid_client", f"client_id must be {WEB_CLIENT_ID}", redirect=False
        )
    redirect_uri = params.get("redirect_uri", "")
    if not same_origin(redirect_uri, base_url) or not in_dashboard(redirect_uri):
        raise AuthorizationRefusedError(
            "invalid_request",
            "redirect_uri must be an absolute URL on this server's own origin, under /app/",
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


def redirect_with(redirect_uri: str, query: Mapping[str, str]) -> Response:
    """303 to ``redirect_uri`` with ``query`` added to its own query string."""
    separator = "&" if urlsplit(redirect_uri).query else "?"
    location = redirect_uri + separator + urlencode(query)
    return RedirectResponse(location, status_code=303, headers=NO_STORE)


def refusal_response(
    ctx: ApiContext, refusal: AuthorizationRefusedError, params: Mapping[str, str]
) -> Response:
    if refusal.redirect:
        query = {"error": refusal.error, "error_description": refusal.description}
        if params.get("state"):
            query["state"] = params["state"]
        return redirect_with(params["redirect_uri"], query)
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
    idp = builtin_of(ctx)
    values = {
        "email": form.get("email", ""),
        "signup_url": f"{ctx.base_url}/app#/signup",
        **{name: form.get(name, "") for name in AUTHORIZATION_PARAMETERS},
    }
    signup = show_form and idp is not None and idp.signup_enabled
    hidden = {"form_hidden": not show_form, "signup_hidden": not signup}
    return page(ctx, "authorize.html", words, values, notice, hidden)
