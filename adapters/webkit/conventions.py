"""HTTP conventions of contract 13 that a route declares beside its handler (the
``located=``, ``tagged=`` and ``no_store=`` options of ``declare.Routes`` apply them).

- ``@located(template)``: a 201 (and a 202) carries ``Location``, the path of the created
  resource, filled in from the route's path parameters and the answer's own fields.
- ``@tagged``: a 200 carries a strong ``ETag``, a digest of its exact JSON body; the same
  digest of the object as it stands is what ``if_match`` compares a PATCH's ``If-Match``
  with, inside the use case's transaction (``ports.driving.preconditions``).
- ``@no_store``: an answer carrying a token or a secret (a presigned URL included) is
  ``Cache-Control: no-store``.

The decorators wrap the Starlette endpoint that ``context.endpoint`` makes, so an
idempotent replay (answered by ``endpoint`` from the stored response) gets the same
headers as the first answer.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Awaitable, Callable
from string import Formatter
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.wire.present import present
from strongroom.domain.errors import InvalidRequestError
from strongroom.ports.driving.preconditions import Precondition

Endpoint = Callable[[Request], Awaitable[Response]]

_NO_STORE = (b"cache-control", b"no-store")
LOCATED = (201, 202)


def etag_of(body: bytes | memoryview) -> str:
    """The strong entity tag of a JSON body: a digest of its exact bytes."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def etag_of_object(obj: Any) -> str:
    """The tag a read of ``obj`` answers (its default view, as ``answer`` presents it)."""
    return etag_of(orjson.dumps(present(obj)))


def located(template: str) -> Callable[[Endpoint], Endpoint]:
    """``Location`` on a 201 or 202: ``template`` (``/v1/backups/{id}``) filled in from the
    path parameters, or else from the top-level fields of the JSON answer."""

    names = {name for _, name, _, _ in Formatter().parse(template) if name}

    def decorate(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)
        async def run(request: Request) -> Response:
            response = await endpoint(request)
            if response.status_code in LOCATED:
                fields: dict[str, Any] = dict(request.path_params)
                if not names <= fields.keys():
                    presented = getattr(response, "fields", None)
                    fields.update(orjson.loads(response.body) if presented is None else presented)
                location = template.format_map(fields).encode("latin-1")
                response.raw_headers.append((b"location", location))
            return response

        run.location = template  # type: ignore[attr-defined]  # read by the OpenAPI document
        return run

    return decorate


def tagged(endpoint: Endpoint) -> Endpoint:
    """A strong ``ETag`` on a 200: the digest of its JSON body."""

    @functools.wraps(endpoint)
    async def run(request: Request) -> Response:
        response = await endpoint(request)
        if response.status_code == 200:
            # Appended as is: the answer has no ETag yet, and MutableHeaders would scan.
            response.raw_headers.append((b"etag", etag_of(response.body).encode()))
        return response

    run.tagged = True  # type: ignore[attr-defined]  # read by the OpenAPI document
    return run


def no_store(endpoint: Endpoint) -> Endpoint:
    """``Cache-Control: no-store`` on the answers of an endpoint whose success carries a
    token or a secret (its refusals, rendered by the exception handlers, carry neither)."""

    @functools.wraps(endpoint)
    async def run(request: Request) -> Response:
        response = await endpoint(request)
        response.raw_headers.append(_NO_STORE)
        return response

    run.no_store = True  # type: ignore[attr-defined]  # read by the OpenAPI document
    return run


def if_match(request: Request) -> Precondition[Any] | None:
    """The request's ``If-Match`` as a precondition on the object as it stands: ``*``
    (any current object), or a list of strong tags of which one must be the object's. A
    weak tag (``W/"..."``) never matches (RFC 9110 13.1.1 compares strongly). ``None``
    without the header."""
    header = request.headers.get("if-match")
    if header is None:
        return None
    tags = _entity_tags(header)
    if "*" in tags:
        return lambda _current: True
    return lambda current: etag_of_object(current) in tags


def _entity_tags(header: str) -> frozenset[str]:
    """The members of an ``If-Match`` list (``*``, ``"tag"``, ``W/"tag"``); anything
    else is a malformed request."""
    tags: set[str] = set()
    for raw in header.split(","):
        tag = raw.strip()
        if not tag:
            continue
        opaque = tag[2:] if tag.startswith("W/") else tag
        if tag != "*" and not (
            len(opaque) >= 2 and opaque[0] == opaque[-1] == '"' and '"' not in opaque[1:-1]
        ):
            raise InvalidRequestError('If-Match must be "*" or a list of entity tags')
        tags.add(tag)
    if not tags:
        raise InvalidRequestError('If-Match must be "*" or a list of entity tags')
    return frozenset(tags)
