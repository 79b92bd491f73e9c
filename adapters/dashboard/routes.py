"""``GET /app`` and ``GET /app/{asset}``: the dashboard, a browser application of plain ES
modules, one stylesheet and one HTML page, shipped in the package (``adapters/dashboard/static``)
and served as they are: no build step.

Every answer carries a strict Content-Security-Policy (only this origin's scripts, styles,
images and connections; no inline script or style; no framing), ``nosniff`` and no referrer.
The application itself calls only ``/v1``, plus ``/idp/token`` and ``/idp/signup`` to sign
in (see docs/dashboard.md).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from urllib.parse import urlsplit

from starlette.responses import Response

from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.declare import HTML, Auth, Routes
from strongroom.adapters.webkit.errors import error_response
from strongroom.adapters.webkit.pages import document

CONNECT_SRC = "'self'"
POLICY_TEMPLATE = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src {connect}; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'"
)
CONTENT_SECURITY_POLICY = POLICY_TEMPLATE.format(connect=CONNECT_SRC)
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
ASSETS: dict[str, object] = {
    "text/javascript": {"schema": {"type": "string"}},
    "text/css": {"schema": {"type": "string"}},
    "image/svg+xml": {"schema": {"type": "string"}},
}

PAGE = "index.html"
PAGE_HEAD = """<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app/style.css">
<script type="module" src="/app/app.js"></script>"""

ASSET_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")

routes = Routes("Dashboard", auth=Auth.NONE)


@functools.cache
def assets() -> dict[str, tuple[bytes, str]]:
    """Every file of the dashboard directory by name, with its media type (read once); the
    page's body is laid out in the shared document (``templates/page.html``)."""
    folder = resources.files("strongroom.adapters.dashboard").joinpath("static")
    found: dict[str, tuple[bytes, str]] = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in MEDIA_TYPES:
            found[entry.name] = (entry.read_bytes(), MEDIA_TYPES[suffix])
    body = found[PAGE][0].decode("utf-8")
    found[PAGE] = (document("Strongroom", PAGE_HEAD, body).encode("utf-8"), MEDIA_TYPES[".html"])
    return found


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def policy_for(ctx: ApiContext) -> str:
    """The strict policy; with an external identity provider, its token endpoint's origin
    is the one other place the browser may connect to (to exchange the code)."""
    token_endpoint = ctx.facade.identity.cli_config(ctx.base_url).token_endpoint
    if _origin(token_endpoint) == _origin(ctx.base_url):
        return CONTENT_SECURITY_POLICY
    return POLICY_TEMPLATE.format(connect=f"{CONNECT_SRC} {_origin(token_endpoint)}")


def _serve(ctx: ApiContext, name: str) -> Response:
    found = assets().get(name)
    if found is None:
        return error_response(ctx.request, 404, "not_found", "no such dashboard file")
    body, media_type = found
    headers = {"Content-Security-Policy": policy_for(ctx), **HEADERS}
    return Response(body, media_type=media_type, headers=headers)


@routes.get("/app", HTML, "The dashboard's page.")
async def get_dashboard(ctx: ApiContext) -> Response:
    """Dashboard

    The browser application (see docs/dashboard.md). It signs in with the authorization
    code grant and PKCE and then calls only `/v1`. No authentication to load it."""
    return _serve(ctx, PAGE)


@routes.get("/app/{asset}", ASSETS, "The file.")
async def get_dashboard_asset(ctx: ApiContext) -> Response:
    """Dashboard file

    A script, stylesheet or image of the dashboard, served with the same
    Content-Security-Policy.

    Errors:
    - `invalid_request`: `asset` is not a file name (letters, digits, `.`, `_`, `-`)
    - `not_found`: no such file"""
    name = ctx.request.path_params["asset"]
    if not ASSET_NAME.fullmatch(name):
        return error_response(ctx.request, 400, "invalid_request", "not a dashboard file name")
    return _serve(ctx, name)
