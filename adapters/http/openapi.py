"""The OpenAPI 3.1 document, generated: components from the models of ``shapes``, paths
from the route table.

Each route of the API is an ``ApiRoute``: its handler's docstring is the operation's
summary (first line) and description; beside it the route names its permissions, body,
answer and the error codes specific to it. The errors every operation of its shape can
meet (credential, path ids, workspace, permission, body, pagination, idempotency) are
derived here, so they cannot drift. ``document_for(app)`` builds the document once per
application and caches it there.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import StrEnum
from importlib import metadata
from typing import Any, Literal, NewType, Protocol, TypeVar, Union, get_args, get_origin
from uuid import UUID

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters import wire
from strongroom.adapters import wire as shapes  # the models' former home; the code below names both
from strongroom.adapters.http import conventions, declared
from strongroom.adapters.http.context import MAX_BODY_BYTES, ApiContext, endpoint
from strongroom.adapters.http.errors import ERROR_CODES, STATUS_BY_CODE
from strongroom.adapters.http.examples import add_examples
from strongroom.adapters.storage.local import KEY_PATTERN
from strongroom.domain.backups import UnsupportedSource
from strongroom.domain.durations import Duration
from strongroom.domain.names import MAX_NAME_LENGTH
from strongroom.domain.pagination import DEFAULT_LIMIT, MAX_LIMIT
from strongroom.domain.permissions import Permission
from strongroom.ports.driving.access import Requirement
from strongroom.ports.driving.idempotency import MAX_KEY_LENGTH

Json = dict[str, Any]

OPENAPI_VERSION = "3.1.0"
BEARER = "bearerAuth"
IDP_BEARER = "idpAccessToken"
_STATE_KEY = "openapi_document"
FORM = "application/x-www-form-urlencoded"
HTML: Json = {"text/html": {"schema": {"type": "string"}}}
BINARY: Json = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
UUID_SCHEMA: Json = {"type": "string", "format": "uuid"}
DURATION_PATTERN = (
    r"^P(?=\d|T\d)(?:\d{1,12}W)?(?:\d{1,12}D)?"
    r"(?:T(?=\d)(?:\d{1,12}H)?(?:\d{1,12}M)?(?:\d{1,12}S)?)?$"
)


def ref(name: str) -> Json:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Json) -> Json:
    """``schema`` or ``null``."""
    if "type" not in schema or isinstance(schema["type"], list):
        return {"oneOf": [*schema.get("oneOf", [schema]), {"type": "null"}]}
    return {**schema, "type": [schema["type"], "null"]}


# --------------------------------------------------------------------------------------
# Components from the models

# Trimmed, 1 to MAX_NAME_LENGTH characters, none a control character (Cc); surrounding
# whitespace (which may be a control character) is trimmed.
_NAME_CHAR = r"[^\x00-\x1f\x7f-\x9f]"
_NAME_EDGE = r"[^\s\x00-\x1f\x7f-\x9f]"
NAME_PATTERN = rf"^\s*{_NAME_EDGE}(?:{_NAME_CHAR}{{0,{MAX_NAME_LENGTH - 2}}}{_NAME_EDGE})?\s*$"

# Named scalars: a component of their own (``$ref``) or an inline schema.
NAMED: dict[Any, tuple[str, Json]] = {
    wire.Name: (
        "Name",
        {
            "type": "string",
            "description": f"1 to {MAX_NAME_LENGTH} characters after trimming surrounding "
            "whitespace, no control characters; stored trimmed.",
            "minLength": 1,
            "pattern": NAME_PATTERN,
        },
    ),
    wire.RoleSlug: (
        "RoleSlug",
        {
            "type": "string",
            "description": "Lowercase letter, then 1 to 39 lowercase letters, digits or hyphens.",
            "pattern": "^[a-z][a-z0-9-]{1,39}$",
            "examples": ["ops"],
        },
    ),
    Duration: (
        "Duration",
        {
            "type": "string",
            "description": "ISO 8601 duration in weeks, days, hours, minutes and seconds only "
            "(`P30D`, `P4W`, `PT36H`), at most 36 500 days in all (400 beyond); months and "
            "years are refused. Returned in canonical "
            "form: weeks become days and zero parts are omitted (`P7D`, `P1DT12H`, `PT0S`).",
            "pattern": DURATION_PATTERN,
            "examples": ["P30D"],
        },
    ),
    Permission: ("PermissionSlug", {"type": "string", "enum": [p.value for p in Permission]}),
}
INLINE: dict[Any, Json] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    bool: {"type": "boolean"},
    Any: {},
    UUID: {"type": "string", "format": "uuid"},
    datetime: {"type": "string", "format": "date-time", "description": shapes.TIMESTAMP},
    wire.NonEmpty: {"type": "string", "minLength": 1},
    wire.Endpoint: {"type": "string", "format": "uri", "examples": ["https://s3.example.com"]},
    wire.Uri: {"type": "string", "format": "uri"},
    wire.Email: {"type": "string", "format": "email"},
    wire.Port: {"type": "integer", "minimum": 1, "maximum": wire.MAX_PORT},
}
# Not shown: PATCH sentinels, ``null`` (made ``nullable``), a source type never accepted.
SKIPPED = (*wire.SENTINELS, type(None), UnsupportedSource)


class Components:
    """The component schemas a document needs, generated as they are met."""

    def __init__(self) -> None:
        self.schemas: dict[str, Json] = {}

    def named(self, name: str, build: Callable[[], Json]) -> Json:
        """A ``$ref`` to ``name``, built on first use."""
        if name not in self.schemas:
            self.schemas[name] = {}
            self.schemas[name] = build()
        return ref(name)

    def of(self, kind: Any, inbound: bool = False) -> Json:
        """The schema of a type; ``inbound`` for request bodies (closed objects)."""
        kind = wire.VIEWS.get(kind, kind)
        if kind in NAMED:
            name, schema = NAMED[kind]
            return self.named(name, lambda: schema)
        if kind in INLINE:
            return dict(INLINE[kind])
        origin, args = get_origin(kind), get_args(kind)
        if origin in (Union, types.UnionType):
            members = [arg for arg in args if arg not in SKIPPED]
            schema = self.union(members, inbound)
            return nullable(schema) if type(None) in args else schema
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin in (list, frozenset, tuple):
            return {"type": "array", "items": self.of(args[0], inbound)}
        if origin in (dict, Mapping):
            return {"type": "object", "additionalProperties": self.of(args[1], inbound)}
        if isinstance(kind, type) and issubclass(kind, StrEnum):
            return {"type": "string", "enum": [member.value for member in kind]}
        if isinstance(kind, NewType):
            return self.of(kind.__supertype__, inbound)
        if attrs.has(kind):
            return self.model(kind, inbound)
        raise TypeError(f"no schema for {kind!r}")

    def union(self, members: list[Any], inbound: bool) -> Json:
        """``oneOf`` the members; a discriminator when each is tagged by ``type``."""
        variants = [self.of(member, inbound) for member in members]
        if len(variants) == 1:
            return variants[0]
        schema: Json = {"oneOf": variants}
        models = [wire.VIEWS.get(member, member) for member in members]
        tags = [_tag(model) for model in models]
        if all(tags):
            schema["discriminator"] = {
                "propertyName": "type",
                "mapping": {
                    tag: variant["$ref"] for tag, variant in zip(tags, variants, strict=True)
                },
            }
        return schema

    def model(self, model: type, inbound: bool) -> Json:
        """A ``$ref`` to the object schema of an attrs model."""
        name = getattr(model, "__schema_name__", model.__name__)
        if inbound and model in wire.VIEWS.values():
            name += "Input"
        return self.named(name, lambda: self.object(model, inbound))

    def object(self, model: type, inbound: bool) -> Json:
        """An object schema: every field, its description and wire options."""
        fields = attrs.fields(attrs.resolve_types(model))
        schema: Json = {"type": "object", "description": _prose(model.__doc__)}
        properties: Json = {}
        required: list[str] = []
        for field in fields:
            key = field.metadata.get("rename", field.name)
            prop = self.of(field.metadata.get("schema_type", field.type), inbound)
            prop = {**prop, **field.metadata.get("schema", {})}
            description = field.metadata.get("description") or wire.field_docs(model).get(
                field.name
            )
            if description:
                prop["description"] = description
            properties[key] = prop
            always = get_origin(field.type) is Literal
            if (
                (always or field.default is attrs.NOTHING)
                if inbound
                else not field.metadata.get("optional")
            ):
                required.append(key)
        schema["properties"] = properties
        schema["required"] = required
        if hasattr(model, "__example_fields__"):
            schema["x-example-fields"] = list(model.__example_fields__)
        if inbound:
            # OAuth's forms ignore unknown parameters, each sent once (RFC 6749 3.1, 3.2).
            ignored = getattr(model, "__ignores_unknown__", False)
            schema["additionalProperties"] = {"type": "string"} if ignored else False
        return schema


def _tag(model: Any) -> str | None:
    if not attrs.has(model) or "type" not in attrs.fields_dict(model):
        return None
    default = attrs.fields_dict(model)["type"].default
    return default if isinstance(default, str) else None


def _prose(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").replace("``", "`")


REFUSALS = "\n\nErrors:\n"


def refusals(doc: str | None) -> tuple[str, dict[str, str]]:
    """A handler's docstring without its ``Errors:`` section, and the section's refusals
    as ``{code: reason}``: one ``- `code`: reason`` item a code, continued on indented lines."""
    prose, _, section = _prose(doc).partition(REFUSALS)
    if re.search(r"^Errors:\s*$", prose, flags=re.MULTILINE):
        raise ValueError(f"an Errors: section needs a blank line before it: {prose[:60]!r}")
    if section and not section.startswith("- "):
        raise ValueError(f"an Errors: section holds only '- `code`: reason' items: {section!r}")
    found = {}
    for item in re.split(r"^- ", section, flags=re.MULTILINE)[1:]:
        matched = re.fullmatch(r"`([a-z_]+)`:\s+(\S.*)", item.strip(), flags=re.DOTALL)
        if matched is None:
            raise ValueError(f"an Errors: item is not '- `code`: reason': {item!r}")
        found[matched[1]] = " ".join(matched[2].split())
    return prose, found


@attrs.frozen
class Named:
    """A component ``name`` for a schema that is not a model (a union of models)."""

    name: str
    kind: Any


@attrs.frozen
class Paged:
    """A page of ``model`` items with a cursor."""

    model: type


@attrs.frozen
class OnePage:
    """Every ``model`` item in one page (``next_cursor`` always null)."""

    model: type
    name: str
    description: str = ""


# --------------------------------------------------------------------------------------
# Components: parameters, headers, security schemes


STRING: Json = {"type": "string"}


def parameter(name: str, where: str, description: str, schema: Json = STRING) -> Json:
    """A parameter ``where`` (``query``, ``header``, ``path``); only path ones are required."""
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": schema,
    }


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


REQUEST_ID_HEADER = {"$ref": "#/components/headers/X-Request-ID"}
LOCATION_HEADER: Json = {
    "description": "The path of the created resource (or of the nearest readable one).",
    "schema": {"type": "string"},
}
RETRY_AFTER_HEADER: Json = {
    "description": "Seconds to wait before retrying.",
    "schema": {"type": "integer", "minimum": 1},
}
ETAG_HEADER: Json = {
    "description": "A strong entity tag of this representation; send it as `If-Match` to "
    "change the object only if nobody changed it since.",
    "schema": {"type": "string"},
}
NO_STORE_HEADER: Json = {
    "description": "`no-store`: the response carries a token or a secret.",
    "schema": {"type": "string", "const": "no-store"},
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


# --------------------------------------------------------------------------------------
# Error codes


STATUS_MEANINGS = {
    400: "Malformed request",
    401: "Missing, invalid or revoked credential",
    403: "Authenticated but not permitted",
    404: "Not found",
    409: "Conflict",
    412: "Precondition failed",
    422: "Unacceptable values",
    429: "Too many failed attempts",
    500: "Internal error",
    502: "Upstream unavailable",
}

OAUTH_ERRORS: dict[str, str] = {
    "invalid_request": "A parameter is missing or repeated, or the body is not a URL-encoded form.",
    "invalid_client": "The client is not `strongroom-cli`, or HTTP Basic credentials carry a "
    "secret or are malformed.",
    "unsupported_grant_type": f"`grant_type` is not `{shapes.DEVICE_CODE_GRANT}`.",
    "invalid_grant": "Unknown device code (or another client's), or one already used.",
    "authorization_pending": "The person has not decided yet; poll again after `interval`.",
    "slow_down": "Polled sooner than `interval` after the previous poll; the interval grows "
    "by 5 seconds.",
    "expired_token": "The device code expired (after 10 minutes); start again.",
    "access_denied": "The person denied the request (or too many wrong passwords).",
}

Reasons = dict[str, list[str]]

READINESS_503: Json = {
    "503": {
        "description": "Not ready: a check is `unavailable`.",
        "headers": {"X-Request-ID": REQUEST_ID_HEADER, "Retry-After": RETRY_AFTER_HEADER},
        "content": {"application/json": {"schema": ref("Readiness")}},
    }
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


def reason(code: str, text: str) -> Reasons:
    """One code with one reason."""
    return {code: [text]}


UNAUTHENTICATED = reason(
    "unauthenticated", "no bearer credential, or an invalid, expired or revoked one"
)
NO_WORKSPACE = reason(
    "forbidden", "the credential is scoped to no workspace (`select a workspace first`)"
)
IN_WORKSPACE: Reasons = {
    "wrong_workspace": ["a person's credential is scoped to another workspace of theirs"],
    "not_found": ["no such workspace, or one the caller does not belong to (indistinguishable)"],
}
JSON_BODY = reason(
    "invalid_request",
    "`Content-Type` is not `application/json`, the body is not a JSON object, a field is "
    "unknown or missing, a value has the wrong JSON type or is out of range, or the body is "
    f"larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB",
)
OPTIONAL_BODY = reason(
    "invalid_request",
    "a body is sent that is not `{}`, or not with `Content-Type: application/json`",
)
PAGE = reason(
    "invalid_request", f"`limit` is not an integer from 1 to {MAX_LIMIT}, or `cursor` is bad"
)
IDEMPOTENT: Reasons = {
    "invalid_request": [f"`Idempotency-Key` is longer than {MAX_KEY_LENGTH} characters"],
    "idempotency_conflict": ["the `Idempotency-Key` was used with a different body"],
}
HUMAN_ONLY = reason("forbidden", "a machine credential (API key or worker) called it")
INTERNAL = reason("internal", "an unhandled failure")
CONDITIONAL: Reasons = {
    "invalid_request": ["`If-Match` is not `*` or a list of entity tags"],
    "precondition_failed": ["`If-Match` names no tag of the object as it stands"],
}
UPSTREAM = reason("upstream_unavailable", "the database or another dependency failed")
REFUSES = "the workspace's billing state ({}) refuses {}"
BILLING_BY_GATE: dict[str, Reasons] = {
    gate: reason("billing_restricted", REFUSES.format(states, what))
    for gate, states, what in (
        ("config", "`blocked`", "configuration changes"),
        ("runs", "`stopped` or `blocked`", "new runs"),
        ("uploads", "`blocked`", "uploads"),
    )
}


def permission(*slugs: Permission) -> Reasons:
    """Refusal for a missing permission."""
    names = " or ".join(f"`{slug.value}`" for slug in slugs)
    return {"forbidden": [f"the credential lacks {names} (`missing permission {slugs[0].value}`)"]}


def path_id(name: str) -> Reasons:
    """Refusal for a malformed path id (a role's ``slug`` is a slug, not a UUID)."""
    if name == "slug":
        return {"invalid_request": ["`slug` in the path is not a well-formed role slug"]}
    return {"invalid_request": [f"`{name}` in the path is not a UUID"]}


def merge(*groups: Reasons) -> Reasons:
    """The reasons of every group, per code, in order."""
    result: Reasons = {}
    for group in groups:
        for code, reasons in group.items():
            result.setdefault(code, [])
            result[code].extend(text for text in reasons if text not in result[code])
    return result


# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Operations: the route table, with each route's documentation beside it


class Auth:
    """How an operation authenticates."""

    NONE = "none"
    BEARER = "bearer"
    IDP = "idp"


@attrs.frozen
class Operation:
    """One documented operation: what its route declares, its handler's docstring as prose."""

    method: str
    path: str
    operation_id: str
    tag: str
    summary: str
    description: str
    ok: tuple[int, Any, str]
    auth: str = Auth.BEARER
    permissions: tuple[Permission, ...] = ()
    # Needed as well, every one (``x-permissions-all``), beside one of ``permissions``.
    also_permissions: tuple[Permission, ...] = ()
    body: Any = None
    body_required: bool = True
    media_type: str = "application/json"
    empty_body: bool = False
    paginated: bool = False
    idempotent: bool = False
    parameters: tuple[Json, ...] = ()
    errors: Mapping[str, str] = attrs.field(factory=dict)
    extra_responses: Mapping[str, Json] = attrs.field(factory=dict)
    html_errors: tuple[int, ...] = ()
    billing: str | None = None
    person: bool = False
    location: str | None = None
    tagged: bool = False
    no_store: bool = False


class ApiRoute(Route):
    """A route of the API and its documented operation."""

    def __init__(self, path: str, operation: Operation, endpoint: Callable[..., Any]) -> None:
        super().__init__(path, endpoint, methods=[operation.method])
        self.operation = operation


def api(
    method: str,
    path: str,
    endpoint: Callable[..., Any],
    operation_id: str,
    tag: str,
    ok: tuple[int, Any, str],
    needs: Requirement | None = None,
    **options: Any,
) -> ApiRoute:
    """The route of ``endpoint``, documented: summary and description from its docstring,
    ``needs`` its permissions, ``ok`` its success (status, model, description), ``errors``
    the reasons specific to it (``{code: reason}``), and ``Operation``'s other options.
    An ``EmptyBody`` body is optional; a ``Paged`` answer takes ``limit`` and ``cursor``."""
    summary, _, description = refusals(endpoint.__doc__)[0].partition("\n")
    options.setdefault("body_required", options.get("body") is not shapes.EmptyBody)
    options.setdefault("paginated", isinstance(ok[1], Paged))
    operation = Operation(
        method,
        re.sub(r"\{(\w+):[^}]*\}", r"{\1}", path),
        operation_id,
        tag,
        summary.strip(),
        " ".join(description.split()),
        ok,
        permissions=needs.permissions if needs else (),
        also_permissions=needs.also if needs else (),
        location=getattr(endpoint, "location", None),
        tagged=getattr(endpoint, "tagged", False),
        no_store=getattr(endpoint, "no_store", False),
        **options,
    )
    return ApiRoute(path, operation, endpoint)


SUCCESS = {"POST": 200, "DELETE": 204}
E = TypeVar("E", bound=Callable[..., Any])
Need = Requirement | None


class Declare(Protocol):
    """A decorator that declares the route of a handler and returns the handler."""

    def __call__(self, handler: E, /) -> E: ...


class Routes(list[BaseRoute]):
    """The documented routes of a module, declared on their handlers::

        @routes.get("/v1/backups/{bid}", Backup, "The backup.", READ_BACKUPS)

    The path, the answer and its description, the permission it needs; ``status`` unless
    the method implies it (200, 204 for DELETE); the operation id is the handler's name in
    camel case unless given; ``shared`` options (``errors`` merged; ``billing`` only for
    writes) apply to every route.
    A handler names the values it needs (``declared``: its ``body`` annotation is the
    request body, ``person=`` a refusal for machines) and returns the answer; one that
    takes only ``ctx`` and returns a ``Response`` is adapted by ``endpoint`` as it is, one
    that takes a ``Request`` is a Starlette endpoint. ``located``, ``tagged`` and
    ``no_store`` apply those ``conventions`` to the route (``tagged`` by default for a read
    of one object and for a PATCH, ``no_store`` for an answer whose shape is ``__secret__``,
    ``located`` at the answer's ``__location__`` for a 201 or 202).
    """

    def __init__(self, tag: str, **shared: Any) -> None:
        super().__init__()
        self.tag = tag
        self.shared = shared
        self.into: list[BaseRoute] = self

    def tagged(self, tag: str, **shared: Any) -> Routes:
        """Routes of another tag (with other ``shared`` options) into this module's list."""
        other = Routes(tag, **{**self.shared, **shared})
        other.into = self.into
        return other

    def route(self, method: str, path: str, answer: Any, said: str, **options: Any) -> Declare:
        """Declare the route of the decorated handler."""
        errors = options.pop("errors", {})
        status = options.pop("status", SUCCESS.get(method, 200))
        name = options.pop("operation_id", None)
        one_object = method == "GET" and path.endswith("}") and attrs.has(answer)
        created = status in conventions.LOCATED
        location = options.pop(
            "located", getattr(answer, "__location__", None) if created else None
        )
        tagged = options.pop("tagged", method == "PATCH" or one_object)
        no_store = options.pop("no_store", getattr(answer, "__secret__", False))
        person = options.get("person")  # a refusal: only a person may call it
        options["person"] = bool(person)

        def declare(handler: E) -> E:
            operation_id = name or re.sub(r"_(\w)", lambda m: m[1].upper(), handler.__name__)
            params = list(inspect.signature(handler).parameters.values())
            body = options.get("body", declared.body_of(handler))
            if body is not None:
                options["body"] = body
            target: Callable[..., Any] = handler
            returns = inspect.signature(handler).return_annotation
            whole = returns in ("Response", Response) and len(params) == 1
            if whole and params[0].annotation in ("ApiContext", ApiContext):
                target = endpoint(handler)  # the whole handler: no values, no presenting
            elif not params or params[0].annotation not in ("Request", Request):
                target = endpoint(
                    declared.declared(
                        handler,
                        path,
                        answer,
                        status,
                        options.get("needs"),
                        person or None,
                        body,
                        options.get("body_required", body is not shapes.EmptyBody),
                        body is shapes.EmptyBody or options.get("empty_body", False),
                    )
                )
            if location:
                target = conventions.located(location)(target)
            if tagged:
                target = conventions.tagged(target)
            if no_store:
                target = conventions.no_store(target)
            # The refusals a route adds: the shared ones, its docstring's, then ``errors``.
            own = {**self.shared.get("errors", {}), **refusals(handler.__doc__)[1], **errors}
            merged = {**self.shared, **options, "errors": own}
            if method == "GET":  # a shared billing gate refuses writes only
                merged["billing"] = options.get("billing")
            ok = (status, answer, said)
            self.into.append(api(method, path, target, operation_id, self.tag, ok, **merged))
            return handler

        return declare

    def get(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a GET route."""
        return self.route("GET", path, answer, said, needs=needs, **more)

    def post(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a POST route."""
        return self.route("POST", path, answer, said, needs=needs, **more)

    def put(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a PUT route."""
        return self.route("PUT", path, answer, said, needs=needs, **more)

    def patch(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a PATCH route."""
        return self.route("PATCH", path, answer, said, needs=needs, **more)

    def create(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a POST that creates: 201, and it takes an ``Idempotency-Key``."""
        return self.route(
            "POST", path, answer, said, needs=needs, status=201, idempotent=True, **more
        )

    def action(self, path: str, answer: Any, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a POST action: its body is optional, none or ``{}``."""
        return self.route("POST", path, answer, said, needs=needs, body=shapes.EmptyBody, **more)

    def delete(self, path: str, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a DELETE route (204, no body)."""
        return self.route("DELETE", path, None, said, needs=needs, **more)


def operations(routes: list[BaseRoute] | None = None) -> list[Operation]:
    """Every documented operation of the route table (the application's by default)."""
    if routes is None:
        from strongroom.adapters.http.app import ROUTES  # noqa: PLC0415 (the app imports us)

        routes = ROUTES
    return [route.operation for route in routes if isinstance(route, ApiRoute)]


# --------------------------------------------------------------------------------------
# Assembly


# The object a path names (by its id, or the segment before ``{id}``), for the 404 that
# every operation on it can answer.
OBJECTS = {"bid": "backup", "aid": "artifact", "run_id": "run", "api-keys": "API key"}
OBJECTS |= {"workers": "worker", "restores": "restore", "members": "member", "roles": "role"}


def object_of(path: str) -> str | None:
    """The object an operation's path names, if it is one ``OBJECTS`` knows."""
    parts = path.split("/")
    ids = [index for index, part in enumerate(parts) if part.startswith("{")]
    if not ids:
        return None
    name = parts[ids[-1]][1:-1]
    return OBJECTS.get(parts[ids[-1] - 1] if name in ("id", "slug") else name)


def reasons_of(operation: Operation) -> Reasons:
    """Every error an operation can answer: those its shape implies, then its own."""
    derived: list[Reasons] = [INTERNAL]
    if operation.auth != Auth.NONE:
        derived += [UNAUTHENTICATED, UPSTREAM]
    names = [part[1:-1] for part in operation.path.split("/") if part.startswith("{")]
    derived += [path_id(name) for name in names if name not in ("key", "asset")]
    if operation.permissions:
        derived += [NO_WORKSPACE, permission(*operation.permissions)]
        derived += [permission(needed) for needed in operation.also_permissions]
    if "{wid}" in operation.path:
        derived.append(IN_WORKSPACE)
    if operation.body is not None and operation.media_type == "application/json":
        derived.append(JSON_BODY if operation.body_required else OPTIONAL_BODY)
    if operation.empty_body:
        derived.append(OPTIONAL_BODY)
    if operation.paginated:
        derived.append(PAGE)
    if operation.idempotent:
        derived.append(IDEMPOTENT)
    if operation.method == "PATCH":
        derived.append(CONDITIONAL)
    if operation.person:
        derived.append(HUMAN_ONLY)
    if operation.billing:
        derived.append(BILLING_BY_GATE[operation.billing])
    noun = object_of(operation.path)
    if noun and "not_found" not in operation.errors:
        where = "the workspace" if "{wid}" in operation.path else "the caller's workspace"
        derived.append(reason("not_found", f"no such {noun} in {where}"))
    return merge(*derived, {code: [text] for code, text in operation.errors.items()})


def _error_responses(operation: Operation) -> dict[str, Json]:
    reasons = reasons_of(operation)
    by_status: dict[int, list[str]] = {}
    for code in reasons:
        by_status.setdefault(STATUS_BY_CODE[code], []).append(code)
    responses: dict[str, Json] = {}
    for status in sorted(by_status):
        codes = by_status[status]
        lines = [f"- `{code}`: {'; '.join(reasons[code])}" for code in codes]
        examples = {
            code: {
                "summary": ERROR_CODES[code].meaning,
                "value": {
                    "error": {
                        "code": code,
                        "message": ERROR_CODES[code].example,
                        "request_id": "req_0b8f3f9e-4a51-4a8e-9c43-7c1f5b0f3f51",
                    }
                },
            }
            for code in codes
        }
        content: Json = {"application/json": {"schema": ref("Error"), "examples": examples}}
        if status in operation.html_errors:
            content = {**HTML, **content}
        headers: Json = {"X-Request-ID": REQUEST_ID_HEADER}
        if status in (429, 502):
            headers["Retry-After"] = RETRY_AFTER_HEADER
        responses[str(status)] = {
            "description": f"{STATUS_MEANINGS[status]}. Codes:\n\n" + "\n".join(lines),
            "headers": headers,
            "content": content,
        }
    return responses


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
    responses.update(_error_responses(operation))
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


def build_document(server_url: str | None = None, routes: list[BaseRoute] | None = None) -> Json:
    """The OpenAPI 3.1 document of ``routes`` (the application's by default);
    ``server_url`` is the public base URL when configured."""
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
        routes: list[BaseRoute] = [r for r in app.routes if isinstance(r, ApiRoute)]
        document = build_document(getattr(app.state, "public_url", None), routes or None)
        setattr(app.state, _STATE_KEY, document)
    return document
