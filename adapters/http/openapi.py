"""The OpenAPI 3.1 document, generated from the route table it is given: components from
the models of ``shapes`` (``schemas.py``), paths from the routes' ``Operation``s.

Each route of the API is an ``ApiRoute`` (``webkit.declare``): its handler's docstring is
the operation's summary (first line) and description; beside it the route names its
permissions, body, answer and the error codes specific to it. The errors every operation
of its shape can meet are derived (``openapi_errors.py``), so they cannot drift.
``document_for(app)`` builds the document of an application's routes once and caches it
there; nothing here imports the application.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from strongroom.adapters import wire as shapes
from strongroom.adapters.http.examples import add_examples
from strongroom.adapters.http.openapi_errors import RETRY_AFTER_HEADER, error_responses
from strongroom.adapters.http.schemas import Components
from strongroom.adapters.storage.local import KEY_PATTERN
from strongroom.adapters.webkit.declare import (
    NO_STORE_HEADER,
    REQUEST_ID_HEADER,
    UUID_SCHEMA,
    ApiRoute,
    Auth,
    Json,
    Named,
    OnePage,
    Operation,
    Paged,
    parameter,
    ref,
)
from strongroom.adapters.webkit.errors import ERROR_CODES, STATUS_BY_CODE
from strongroom.domain.pagination import DEFAULT_LIMIT, MAX_LIMIT
from strongroom.ports.driving.idempotency import MAX_KEY_LENGTH

OPENAPI_VERSION = "3.1.0"
BEARER = "bearerAuth"
IDP_BEARER = "idpAccessToken"
_STATE_KEY = "openapi_document"


def _path_id(name: str, description: str) -> Json:
    return parameter(name, "path", f"{description} Not a UUID: 400.", UUID_SCHEMA)


# `*` or entity tags (`"tag"`, `W/"tag"`, no quote or comma inside), separated by commas.
_TAG = r'(?:\*|(?:W/)?"[^",]*")'
IF_MATCH_PATTERN = rf"^[ \t,]*{_TAG}(?:[ \t]*,[ \t,]*{_TAG})*[ \t,]*$"
PAGE_SIZE = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
PARAMETERS: dict[str, Json] = {
    "limit": parameter(
        "limit", "query", f"Page size, 1 to {MAX_LIMIT}; anything else gives 400.", PAGE_SIZE
    ),
    "cursor": parameter(
        "cursor",
        "query",
        "Opaque `next_cursor` of the previous page; a bad one gives 400.",
        {"type": "string", "format": "page-cursor", "pattern": "^[A-Za-z0-9_-]+$"},
    ),
    "Idempotency-Key": parameter(
        "Idempotency-Key",
        "header",
        "A repeat with the same key and body within 24 h returns the first response unchanged;"
        " the same key with another body gives 409 `idempotency_conflict`. Scoped to the "
        "principal and the route.",
        {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    ),
    "If-Match": parameter(
        "If-Match",
        "header",
        "`*`, or the `ETag` a read of the object returned (a list of tags is allowed): the "
        "change is made only if the object is still as it was read, otherwise 412 "
        "`precondition_failed` and nothing changes. Weak tags never match.",
        {"type": "string", "pattern": IF_MATCH_PATTERN},
    ),
    "X-Request-ID": parameter(
        "X-Request-ID",
        "header",
        "Any value is accepted. It is echoed (in the `X-Request-ID` response header and "
        "`error.request_id`) when it is 1 to 200 characters from `!` to `~`; any other value "
        "is replaced by a generated `req_<uuid>`.",
    ),
    "wid": _path_id("wid", "The workspace id; it must be the credential's workspace."),
    "bid": _path_id("bid", "The backup id."),
    "id": _path_id("id", "The object's id."),
    "user_id": _path_id("id", "The member's user id."),
    "slug": parameter(
        "slug", "path", "The role's slug. Not a well-formed slug: 400.", ref("RoleSlug")
    ),
    "run_id": _path_id("run_id", "The run id."),
    "aid": _path_id("aid", "The artifact id."),
    "did": _path_id("did", "The delivery id."),
    "key": parameter(
        "key",
        "path",
        "The object key (segments of letters, digits, `.`, `_`, `-`).",
        {"type": "string", "pattern": KEY_PATTERN.pattern},
    ),
    "asset": parameter(
        "asset",
        "path",
        "A file of the dashboard, e.g. `app.js`.",
        {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$"},
    ),
}


def _param(name: str) -> Json:
    return {"$ref": f"#/components/parameters/{name}"}


LOCATION_HEADER: Json = {
    "description": "The path of the created resource (or of the nearest readable one).",
    "schema": {"type": "string"},
}
ETAG_HEADER: Json = {
    "description": "A strong entity tag of this representation; send it as `If-Match` to "
    "change the object only if nobody changed it since.",
    "schema": {"type": "string"},
}


def _security_schemes() -> dict[str, Json]:
    return {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <token>`: a person's session token "
            "(`bks_...`), an API key (`bkk_...`) or a worker token (`bkw_...`).",
        },
        IDP_BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "An access token of the identity provider (from "
            "`POST /idp/token`); accepted only by `POST /v1/auth/sessions`.",
        },
    }


READINESS_503: Json = {
    "503": {
        "description": "Not ready: a check is `unavailable`.",
        "headers": {"X-Request-ID": REQUEST_ID_HEADER, "Retry-After": RETRY_AFTER_HEADER},
        "content": {"application/json": {"schema": ref("Readiness")}},
    }
}


def operations(routes: Sequence[BaseRoute]) -> list[Operation]:
    """Every documented operation of a route table."""
    return [route.operation for route in routes if isinstance(route, ApiRoute)]


def _content(components: Components, answer: Any) -> Json:
    if answer is None or isinstance(answer, dict):
        return answer or {}
    if isinstance(answer, Paged):
        name = answer.model.__name__
        schema = components.named(
            f"{name}List",
            lambda: _page_of(components, answer.model, "One page, newest first.", NEXT_CURSOR),
        )
    elif isinstance(answer, Named):
        schema = components.named(answer.name, lambda: components.of(answer.kind))
    elif isinstance(answer, OnePage):
        schema = components.named(
            answer.name,
            lambda: _page_of(components, answer.model, answer.description, ONE_PAGE_CURSOR),
        )
    else:
        schema = components.of(answer)
    return {"application/json": {"schema": schema}}


def _page_of(components: Components, model: type, description: str, cursor: Json) -> Json:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "data": {"type": "array", "items": components.of(model)},
            "next_cursor": cursor,
        },
        "required": ["data", "next_cursor"],
    }


NEXT_CURSOR = {
    "type": ["string", "null"],
    "description": "Pass as `?cursor=` for the next page; null on the last page.",
}
ONE_PAGE_CURSOR = {"type": "null", "description": "Always null: one page."}


def _operation_object(components: Components, operation: Operation) -> Json:
    slugs = [slug.value for slug in operation.permissions]
    also = [slug.value for slug in operation.also_permissions]
    if slugs:
        needs = "Requires permission " + " or ".join(f"`{slug}`" for slug in slugs)
        needs += "".join(f" and `{slug}`" for slug in also) + "."
    elif operation.auth == Auth.NONE:
        needs = "No authentication."
    else:
        needs = "No permission needed."
    status, answer, said = operation.ok
    success: Json = {"description": said, "headers": {"X-Request-ID": REQUEST_ID_HEADER}}
    if operation.location is not None:
        success["headers"]["Location"] = LOCATION_HEADER
    if operation.tagged:
        success["headers"]["ETag"] = ETAG_HEADER
    if operation.no_store:
        success["headers"]["Cache-Control"] = NO_STORE_HEADER
    content = _content(components, answer)
    if content:
        success["content"] = content
    responses: dict[str, Json] = {str(status): success}
    responses.update(operation.extra_responses)
    responses.update(error_responses(operation))
    parameters = [
        _param("user_id" if name == "id" and "/members/" in operation.path else name)
        for name in (part[1:-1] for part in operation.path.split("/") if part.startswith("{"))
    ]
    if operation.paginated:
        parameters += [_param("limit"), _param("cursor")]
    parameters += [*operation.parameters]
    if operation.idempotent:
        parameters.append(_param("Idempotency-Key"))
    if operation.method == "PATCH":
        parameters.append(_param("If-Match"))
    result: Json = {
        "operationId": operation.operation_id,
        "tags": [operation.tag],
        "summary": operation.summary,
        "description": f"{operation.description}\n\n{needs}".strip(),
        "x-permissions": slugs,
        "security": {
            Auth.NONE: [],
            Auth.BEARER: [{BEARER: []}],
            Auth.IDP: [{IDP_BEARER: []}],
        }[operation.auth],
        "parameters": [*parameters, _param("X-Request-ID")],
    }
    if also:
        result["x-permissions-all"] = also
    if operation.body is not None and operation.method != "DELETE":
        body = operation.body
        schema = body if isinstance(body, dict) else components.of(body, inbound=True)
        result["requestBody"] = {
            "required": operation.body_required,
            "content": {operation.media_type: {"schema": schema}},
        }
    result["responses"] = dict(sorted(responses.items()))
    return result


TAGS = {
    "System": "Health and readiness (outside `/v1`).",
    "Access": "Signing in, workspaces scopes, who am I.",
    "Workspaces": "Tenants, their quotas and audit trail.",
    "Members": "Members and roles of a workspace.",
    "Backups": "Backup configurations.",
    "API keys": "Machine credentials of a workspace with fixed permissions.",
    "Workers": "Machine executors of local backups.",
    "Runs and artifacts": "Runs of backups; artifact bytes move through presigned URLs, never "
    "through the API.",
    "Identity provider": "The built-in identity provider (outside `/v1`): local accounts and "
    "the OAuth 2.0 device authorization grant (RFC 8628) and, for browsers, the authorization "
    "code grant with PKCE (RFC 7636).",
    "Webhooks": "Signed notifications of runs, health and restores, with their delivery log.",
    "Storage": "The local-disk storage's presigned URLs (outside `/v1`).",
    "Documentation": "This reference.",
    "Dashboard": "The browser application at `/app` (outside `/v1`; it calls only documented "
    "routes).",
}
INTRODUCTION = """\
The REST interface of Strongroom, a multi-tenant backup service. Everything under `/v1` \
needs `Authorization: Bearer <token>` except `GET /v1/auth/cli/config`.

- Bodies are JSON (`Content-Type: application/json`); unknown fields are refused with 400 \
`invalid_request`. Action bodies (`pause`, `resume`, sessions) are optional: none, or `{}`.
- Success: 201 for a POST that creates (it returns the resource), 200 for reads, PATCH and \
actions, 204 with no body for DELETE.
- Lists take `?limit=` (1 to 200, default 50) and `?cursor=`, return \
`{"data": [...], "next_cursor": string | null}`, newest first.
- Identifiers are UUIDs; timestamps are RFC 3339 in UTC with a `Z` suffix.
- Every response carries `X-Request-ID`; every failure is `{"error": {code, message, \
request_id}}` (codes under `x-error-codes`). A method a path does not allow: 405 \
`invalid_request`.
- Checks run in this order, the first failing wins: credential (401), malformed path id \
(400), no workspace selected (403), `{wid}` match (403 `wrong_workspace` / 404), missing \
permission (403), malformed body or `If-Match` (400), object (404), `If-Match` (412), kind \
rules (422), billing (409), quota (409), other 409/422.
- Answers that create carry `Location`; reads of single objects carry a strong `ETag`, which \
a PATCH sends as `If-Match` to change the object only if nobody changed it since.
"""


def build_document(routes: Sequence[BaseRoute], server_url: str | None = None) -> Json:
    """The OpenAPI 3.1 document of ``routes``; ``server_url`` is the public base URL when
    configured."""
    components = Components()
    for model in (shapes.Error, shapes.OAuthError, shapes.DeviceDecision):
        components.of(model)
    paths: dict[str, Json] = {}
    for operation in operations(routes):
        paths.setdefault(operation.path, {})[operation.method.lower()] = _operation_object(
            components, operation
        )
    document: Json = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Strongroom API",
            "version": _version(),
            "description": INTRODUCTION,
            "license": {"name": "Apache 2.0", "identifier": "Apache-2.0"},
        },
    }
    document["servers"] = [
        {"url": server_url.rstrip("/")}
        if server_url
        else {"url": "/", "description": "This server (`STRONGROOM_PUBLIC_URL` unset)."}
    ]
    schemas = components.schemas
    document.update(
        {
            "tags": [{"name": name, "description": text} for name, text in TAGS.items()],
            "security": [{BEARER: []}],
            "paths": paths,
            "components": {
                "schemas": dict(sorted(schemas.items())),
                "parameters": PARAMETERS,
                "headers": {
                    "X-Request-ID": {
                        "description": "The request id: the client's own, echoed, or a "
                        "generated `req_<uuid>`; error bodies repeat it.",
                        "schema": {"type": "string"},
                    }
                },
                "securitySchemes": _security_schemes(),
            },
            "x-error-codes": [
                {"code": code, "status": status, "description": ERROR_CODES[code].meaning}
                for code, status in STATUS_BY_CODE.items()
            ],
        }
    )
    return add_examples(document)


def _version() -> str:
    try:
        return metadata.version("strongroom")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "0+unknown"


def document_for(app: Starlette) -> Json:
    """The document of ``app``, built on first use and cached in its state."""
    document: Json | None = getattr(app.state, _STATE_KEY, None)
    if document is None:
        document = build_document(app.routes, getattr(app.state, "public_url", None))
        setattr(app.state, _STATE_KEY, document)
    return document
