"""``GET /openapi.json`` and ``GET /docs``: the OpenAPI document and its reference page.

Both are public (no authentication) and built once per application: the JSON text and the
HTML page are rendered from ``openapi.document_for(app)`` on first use and cached in the
application's state. The page (``reference``) is self-contained (inline stylesheet, no
script, no external resource) and served with a Content-Security-Policy that allows only
that stylesheet, by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import json

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.http.openapi import document_for
from strongroom.adapters.http.reference import STYLE, render_page
from strongroom.adapters.webkit.declare import HTML, Auth, Routes

_STATE_KEY = "openapi_published"

_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


routes = Routes("Documentation", auth=Auth.NONE)


@attrs.frozen
class Published:
    """The document as served: its JSON text and its HTML page."""

    json: bytes
    html: str


def published(app: Starlette) -> Published:
    """The rendered document of ``app``, built on first use and cached in its state."""
    cached: Published | None = getattr(app.state, _STATE_KEY, None)
    if cached is None:
        document = document_for(app)
        cached = Published(
            json=json.dumps(document, ensure_ascii=False).encode("utf-8"),
            html=render_page(document),
        )
        setattr(app.state, _STATE_KEY, cached)
    return cached


@routes.get("/openapi.json", {"application/json": {"schema": {"type": "object"}}}, "The document.")
async def get_open_api_document(request: Request) -> Response:
    """This OpenAPI document

    The OpenAPI 3.1 description of every operation. No authentication."""
    return Response(published(request.app).json, media_type="application/json")


@routes.get("/docs", HTML, "The page.")
async def get_docs_page(request: Request) -> Response:
    """API reference page

    This document as a self-contained HTML page. No authentication."""
    return Response(
        published(request.app).html,
        media_type="text/html; charset=utf-8",
        headers=PAGE_HEADERS,
    )
