"""The route declaration DSL: a module's routes declared on their handlers, each a
Starlette ``Route`` that carries its documented ``Operation``.

``Routes`` turns a handler into an endpoint (``declared`` supplies its values in the
contract's order of checks, ``conventions`` adds ``Location``, ``ETag`` and
``Cache-Control``) and files it with what a document generator needs: the handler's
docstring (summary, description, ``Errors:`` refusals), its permissions, body and answer.
The document itself is built elsewhere, from the route table it is given.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from strongroom.adapters.webkit import conventions, declared
from strongroom.adapters.webkit.context import ApiContext, endpoint
from strongroom.adapters.wire.system import EmptyBody
from strongroom.domain.permissions import Permission
from strongroom.ports.driving.access import Requirement

Json = dict[str, Any]

FORM = "application/x-www-form-urlencoded"
HTML: Json = {"text/html": {"schema": {"type": "string"}}}
BINARY: Json = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
UUID_SCHEMA: Json = {"type": "string", "format": "uuid"}
REQUEST_ID_HEADER = {"$ref": "#/components/headers/X-Request-ID"}
NO_STORE_HEADER: Json = {
    "description": "`no-store`: the response carries a token or a secret.",
    "schema": {"type": "string", "const": "no-store"},
}


def ref(name: str) -> Json:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def prose(doc: str | None) -> str:
    """A docstring as Markdown prose: dedented, ``literal`` as `literal`."""
    return inspect.cleandoc(doc or "").replace("``", "`")


REFUSALS = "\n\nErrors:\n"


def refusals(doc: str | None) -> tuple[str, dict[str, str]]:
    """A handler's docstring without its ``Errors:`` section, and the section's refusals
    as ``{code: reason}``: one ``- `code`: reason`` item a code, continued on indented lines."""
    text, _, section = prose(doc).partition(REFUSALS)
    if re.search(r"^Errors:\s*$", text, flags=re.MULTILINE):
        raise ValueError(f"an Errors: section needs a blank line before it: {text[:60]!r}")
    if section and not section.startswith("- "):
        raise ValueError(f"an Errors: section holds only '- `code`: reason' items: {section!r}")
    found = {}
    for item in re.split(r"^- ", section, flags=re.MULTILINE)[1:]:
        matched = re.fullmatch(r"`([a-z_]+)`:\s+(\S.*)", item.strip(), flags=re.DOTALL)
        if matched is None:
            raise ValueError(f"an Errors: item is not '- `code`: reason': {item!r}")
        found[matched[1]] = " ".join(matched[2].split())
    return text, found


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
    options.setdefault("body_required", options.get("body") is not EmptyBody)
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
                        options.get("body_required", body is not EmptyBody),
                        body is EmptyBody or options.get("empty_body", False),
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
        return self.route("POST", path, answer, said, needs=needs, body=EmptyBody, **more)

    def delete(self, path: str, said: str, needs: Need = None, **more: Any) -> Declare:
        """Declare a DELETE route (204, no body)."""
        return self.route("DELETE", path, None, said, needs=needs, **more)
