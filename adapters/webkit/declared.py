"""Handlers that declare what they need by their parameters' names.

A route's handler names the values it takes; ``declared`` supplies them in the contract's
order of checks (credential, path ids, person, permission, body, page, idempotency key,
``If-Match``) and presents what the handler returns as the route's answer::

    @routes.get("/v1/workers/{id}", Worker, "The worker.", READ_WORKERS)
    async def get_worker(facade: Strongroom, grant: Grant, id: UUID) -> DomainWorker:
        return await facade.workers.get(grant, id)

The names: ``ctx`` (the ``ApiContext``), ``facade``, ``caller`` (authenticated, a person
when the route says ``person=``), ``grant`` (the route's requirement, on the object its
path names), a path parameter (a UUID; ``slug`` a role slug), ``body`` (parsed as its
annotation, which the OpenAPI document shows), ``page``, ``idempotency`` and
``precondition``. A handler that takes no ``body`` on a route with an optional empty body
(an action, ``empty_body=True``) has it checked. The answer: a ``Response`` as it is,
``None`` as 204, anything else presented (through the route's model when it is a model).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.responses import Response

from strongroom.adapters.webkit.context import ApiContext, json_response, no_content
from strongroom.adapters.webkit.conventions import if_match
from strongroom.adapters.wire.present import present
from strongroom.ports.driving.access import Requirement
from strongroom.ports.driving.preconditions import Precondition

Handler = Callable[..., Awaitable[Any]]
IfMatch = Precondition[Any] | None
"""The ``precondition`` a handler takes: the request's ``If-Match``, if any."""
_LATE: dict[str, Callable[[ApiContext], Any]] = {
    "page": ApiContext.page,
    "idempotency": ApiContext.idempotency,
    "precondition": lambda ctx: if_match(ctx.request),
}
_NAMED = {"ctx", "facade", "caller", "grant", "body", *_LATE}


def path_parameters(path: str) -> list[str]:
    """The names of ``path``'s parameters, in order (``{key:path}`` is ``key``)."""
    return [part[1:-1].split(":")[0] for part in path.split("/") if part.startswith("{")]


def target_of(path: str) -> str | None:
    """The path id of the object an operation acts on, for the audit of a denial: the last
    one, unless that is only the workspace of a collection (``/workspaces/{wid}/roles``)."""
    names = path_parameters(path)
    if not names or (names[-1] == "wid" and not path.endswith("}")):
        return None
    return names[-1]


def body_of(handler: Handler) -> Any:
    """The model the handler's ``body`` parameter is annotated with, or ``None``."""
    if "body" not in inspect.signature(handler).parameters:
        return None
    return typing.get_type_hints(handler)["body"]


def declared(
    handler: Handler,
    path: str,
    answer: Any,
    status: int,
    needs: Requirement | None,
    person: str | None,
    body: Any,
    body_required: bool,
    empty_body: bool,
) -> Callable[[ApiContext], Awaitable[Response]]:
    """A handler of an ``ApiContext`` that supplies ``handler``'s values for the route
    ``path`` (``needs``, a ``person`` refusal, its ``body``), answering ``status``."""
    names = list(inspect.signature(handler).parameters)
    path_ids = [name for name in path_parameters(path) if name in names]
    unknown = set(names) - _NAMED - set(path_ids)
    if unknown or ("grant" in names and needs is None):
        raise TypeError(f"{handler.__name__}: no value for {sorted(unknown) or 'grant'}")
    target, wants_caller = target_of(path), "caller" in names or person is not None
    late = [name for name in _LATE if name in names]
    model = answer if isinstance(answer, type) and attrs.has(answer) else None
    body_model = body if "body" in names else None
    empty = body_model is None and empty_body

    async def respond(ctx: ApiContext) -> Response:
        values: dict[str, Any] = {}
        if "ctx" in names:
            values["ctx"] = ctx
        if "facade" in names:
            values["facade"] = ctx.facade
        if "grant" in names:
            assert needs is not None
            values["grant"] = await ctx.grant(needs, target)
        elif wants_caller:
            values["caller"] = await ctx.caller()
        for name in path_ids:
            values[name] = ctx.role_slug() if name == "slug" else ctx.path_id(name)
        if person is not None:
            values["caller"].person(person)
        if body_model is not None:
            values["body"] = ctx.json(body_model, optional=not body_required)
        elif empty:
            ctx.empty_body()
        for name in late:
            values[name] = _LATE[name](ctx)
        if "caller" not in names:
            values.pop("caller", None)
        result = await handler(**values)
        if isinstance(result, Response):
            return result
        if result is None:
            return no_content()
        return json_response(present(result, model if attrs.has(type(result)) else None), status)

    respond.__name__, respond.__doc__ = handler.__name__, handler.__doc__
    return respond
