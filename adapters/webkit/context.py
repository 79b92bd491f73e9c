"""What every endpoint needs, in the order the contract checks it: credential, path ids,
workspace and permission (``grant``), body, then the use case (404, kind rules, billing,
quota, other conflicts).

Endpoints are coroutine functions of an ``ApiContext``; ``endpoint`` reads the body
(capped) and awaits the function on the event loop: the use cases are async, so no request
hops to a thread. A body over the cap is refused (400) when the handler first reads it,
which is after the credential: an unauthenticated oversized body is 401 (contract 13).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from uuid import UUID

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from strongroom.adapters.webkit.bodies import parse_json_object
from strongroom.adapters.webkit.conventions import LOCATED
from strongroom.adapters.wire.converter import structure
from strongroom.adapters.wire.present import kept_render, present
from strongroom.adapters.wire.system import EmptyBody
from strongroom.domain.errors import InvalidRequestError, StrongroomError, UnauthenticatedError
from strongroom.domain.pagination import DEFAULT_LIMIT, Cursor, PageRequest
from strongroom.domain.permissions import check_role_slug
from strongroom.domain.principals import Caller, PrincipalType
from strongroom.domain.tokens import TokenKind, token_kind
from strongroom.ports.driving import Bearer, IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant, Requirement

T = TypeVar("T")
_PRINCIPALS: dict[TokenKind | None, str] = {
    TokenKind.SESSION: PrincipalType.USER.value,
    TokenKind.API_KEY: PrincipalType.API_KEY.value,
    TokenKind.WORKER: PrincipalType.WORKER.value,
}
MAX_BODY_BYTES = 1024 * 1024


def render_json(data: Any) -> str:
    """The JSON text of a response body (compact, UTF-8 as is)."""
    return orjson.dumps(data).decode()


class JsonResponse(Response):
    """A JSON answer whose headers are built as they will be sent: ``Response``'s own
    constructor renders the content and works out generic headers, the same two headers
    at a higher cost on every answer."""

    media_type = "application/json"
    # The top-level fields of the body as presented, kept for ``located`` (a 201 or 202
    # fills ``Location`` from them instead of parsing the bytes back).
    fields: dict[str, Any] | None = None

    def __init__(self, body: bytes, status_code: int = 200) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        self.raw_headers = [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/json"),
        ]


_NO_LENGTH = frozenset({204, 304})


def json_response(data: Any, status: int = 200) -> Response:
    """A JSON response (orjson: a 50-item page encodes ten times faster than with json)."""
    if status < 200 or status in _NO_LENGTH:
        return Response(orjson.dumps(data), status_code=status, media_type="application/json")
    response = JsonResponse(orjson.dumps(data), status)
    if status in LOCATED and isinstance(data, dict):
        response.fields = data
    return response


def answer(result: Any, status: int = 200, model: type | None = None, **extra: Any) -> Response:
    """A JSON response presenting ``result`` (through ``model`` when given): the text a
    store just rendered of it when there is one (``kept_render``: a created backup)."""
    if model is None and not extra and status >= 200 and status not in _NO_LENGTH:
        kept = kept_render(result)
        if kept is not None:
            return JsonResponse(kept, status)
    return json_response(present(result, model, **extra), status)


def no_content() -> Response:
    """204 with no body."""
    return Response(status_code=204)


def principal_of(token: str) -> str | None:
    """The kind of principal a well-formed ``token`` stands for (``user``, ``api_key``,
    ``worker``), or ``None``."""
    return _PRINCIPALS.get(token_kind(token))


class ApiContext:
    """One request, with helpers that each perform one of the contract's checks."""

    def __init__(self, request: Request, body: bytes, *, oversized: bool = False) -> None:
        self.request = request
        self._body = body
        self._oversized = oversized
        # The request's state as the layer and the lifespan filled it in (read directly:
        # ``request.state`` would build a view of it on every request).
        self._state: dict[str, Any] = request.scope.setdefault("state", {})
        self.facade: Strongroom = self._state["facade"]
        self.request_id = str(self._state.get("request_id", ""))
        self._caller: Caller | None = None

    async def still_connected(self) -> bool:
        """Whether the client is still there to be answered (its connection is open)."""
        return not await self.request.is_disconnected()

    def bearer(self) -> Bearer:
        """The request's bearer credential, not checked yet (401 when there is none)."""
        scheme, _, token = _header(self.request.scope, b"authorization").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise UnauthenticatedError("missing bearer credential")
        # For the access log: the kind of credential presented (a 401 is logged anonymous),
        # worked out only if an access event is written.
        self._state["principal"] = functools.partial(principal_of, token)
        return Bearer(token, self.request_id)

    @property
    def body(self) -> bytes:
        """The request's body; one over the cap is ``invalid_request`` here, when a handler
        reads it (after the credential), not before the handler runs."""
        if self._oversized:
            raise InvalidRequestError(f"body is larger than {MAX_BODY_BYTES} bytes")
        return self._body

    async def caller(self) -> Caller:
        """The authenticated caller (401 ``unauthenticated`` otherwise)."""
        if self._caller is None:
            bearer = self.bearer()
            self._caller = await self.facade.access.authenticate(bearer.token, self.request_id)
        return self._caller

    async def person(self, refusal: str) -> Caller:
        """The caller, who must be a person: a machine credential gets 403 ``refusal``
        (checked before the body, as the contract orders a 403 before a 400)."""
        caller = await self.caller()
        caller.person(refusal)
        return caller

    async def grant(self, requirement: Requirement, target: str | None = None) -> Grant:
        """The first checks of a handler that authorizes itself: the caller (401), every id
        of the path (400; a role ``{slug}`` too), then ``requirement`` (403), in the path's
        workspace ``{wid}`` when it names one, on the object of the path id ``target``."""
        caller = await self.caller()
        ids: dict[str, UUID | str] = {
            name: self.role_slug() if name == "slug" else self.path_id(name)
            for name in self.request.path_params
        }
        workspace_id = ids.get("wid")
        assert workspace_id is None or isinstance(workspace_id, UUID)
        target_id = None if target is None else ids[target]
        return await self.facade.access.authorize(
            caller, requirement, workspace_id=workspace_id, target_id=target_id
        )

    def role_slug(self) -> str:
        """The ``{slug}`` path parameter, a well-formed role slug (400 otherwise)."""
        return check_role_slug(self.request.path_params["slug"])

    async def path_id_after_credential(self, name: str) -> UUID:
        """``path_id`` for handlers that leave the credential to a joined read: a malformed
        id is 400 only once the credential has passed (401 outranks 400)."""
        try:
            return self.path_id(name)
        except InvalidRequestError:
            await self.caller()
            raise

    async def parsed_after_permission(
        self, parse: Callable[[], T], requirement: Requirement, *, workspace_id: UUID
    ) -> T:
        """``parse()`` (of the body or the query) for handlers that leave the credential
        to the use case: a malformed request is refused only once the credential and the
        permission have passed (401 and 403 outrank 400)."""
        try:
            return parse()
        except StrongroomError:
            caller = await self.caller()
            await self.facade.access.authorize(caller, requirement, workspace_id=workspace_id)
            raise

    def path_id(self, name: str) -> UUID:
        """A UUID path parameter (400 ``invalid_request`` otherwise)."""
        raw = self.request.path_params[name]
        try:
            return UUID(raw)
        except ValueError as error:
            raise InvalidRequestError(f"{name} in the path is not a UUID") from error

    def json_object(self, *, optional: bool = False) -> dict[str, Any]:
        """The body as a JSON object."""
        return parse_json_object(
            self.body, self.request.headers.get("content-type"), optional=optional
        )

    def json(self, cls: type[T], *, optional: bool = False) -> T:
        """The body structured as ``cls`` (unknown fields and wrong types refused)."""
        return structure(self.json_object(optional=optional), cls)

    def empty_body(self) -> None:
        """An action's optional body: absent or ``{}``; a body that is not JSON, or that
        has any field, is ``invalid_request``."""
        self.json(EmptyBody, optional=True)

    def page(self) -> PageRequest:
        """``?limit=`` (1..200, default 50) and ``?cursor=``."""
        cursor = self.request.query_params.get("cursor")
        return PageRequest(self.limit(), None if cursor is None else Cursor.decode(cursor))

    def limit(self) -> int:
        """``?limit=``: 1..200, default 50 (a list whose cursor is not a ``Cursor`` reads
        its own ``?cursor=``)."""
        raw_limit = self.request.query_params.get("limit")
        limit = DEFAULT_LIMIT
        if raw_limit is not None:
            # ``str.isdigit`` alone also accepts "²" and other non-ASCII digits.
            if not (raw_limit.isascii() and raw_limit.isdigit()) or len(raw_limit) > 4:
                raise InvalidRequestError("limit must be an integer between 1 and 200")
            limit = int(raw_limit)
        return PageRequest(limit).limit

    def idempotency(self) -> IdempotencyKey | None:
        """The request's ``Idempotency-Key``, bound to this route and body. A replay
        returns the first result, which the handler presents as it did the first time."""
        key = self.request.headers.get("idempotency-key")
        if key is None:
            return None
        body = self.json_object(optional=True)
        fingerprint = hashlib.sha256(render_json_canonical(body).encode()).hexdigest()
        route = f"{self.request.method} {self.request.url.path}"
        return IdempotencyKey(key, route, fingerprint)

    @property
    def base_url(self) -> str:
        """The public base URL: ``STRONGROOM_PUBLIC_URL``, else the request's scheme and host."""
        configured: str | None = getattr(self.request.app.state, "public_url", None)
        if configured:
            return configured.rstrip("/")
        return f"{self.request.url.scheme}://{self.request.url.netloc}"

    @property
    def mail_base_url(self) -> str:
        """The base of links sent by mail: ``STRONGROOM_PUBLIC_URL``, else the address the
        server listens on; never the request's ``Host``, which anyone sending the request
        chooses (contract section 13)."""
        configured: str | None = getattr(self.request.app.state, "public_url", None)
        if configured:
            return configured.rstrip("/")
        host, port = self.request.scope.get("server") or ("127.0.0.1", 8080)
        shown = f"[{host}]" if ":" in str(host) else str(host)
        return f"{self.request.url.scheme}://{shown}:{port}"


def _header(scope: Scope, name: bytes) -> str:
    """The first value of the request header ``name`` (lower case), or ``""`` (as
    ``request.headers.get``, without building the headers' view)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


def render_json_canonical(data: Any) -> str:
    """A canonical JSON text (sorted keys), so equal bodies fingerprint equally."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_BODY_HEADERS = (b"content-length", b"transfer-encoding")
_BODILESS = ("GET", "HEAD")


async def _read_capped(request: Request) -> tuple[bytes, bool]:
    """The body, or (once it passes the cap, without reading further) nothing and True."""
    scope = request.scope
    if scope["method"] in _BODILESS:
        for name, _ in scope["headers"]:
            if name in _BODY_HEADERS:
                break
        else:
            return b"", False  # a GET without either header has no body in HTTP/1.1
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"", True
        chunks.append(chunk)
    return b"".join(chunks), False


def endpoint(
    handler: Callable[[ApiContext], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Adapt a handler of an ``ApiContext`` to a Starlette endpoint."""

    async def run(request: Request) -> Response:
        body, oversized = await _read_capped(request)
        return await handler(ApiContext(request, body, oversized=oversized))

    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run
