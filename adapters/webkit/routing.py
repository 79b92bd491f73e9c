"""A Starlette router that tries only the routes a path could match.

Starlette's ``Router`` tries every route in order, one regular expression each, until one
matches: with some seventy routes, a request for a route near the end pays for all of
them. ``IndexedRouter`` files each route under the literal segments its path starts with
(``/v1/backups/{bid}`` under ``("v1", "backups")``), and a request tries only the routes
filed under its own first two segments, under its first segment alone, and those with no
literal start, in their declared order. No other route could match the path, so the
outcome (the route, a 405 for a partial match, the trailing-slash redirect, the 404) is
the one Starlette's scan would give.

It also serves a plain route (an async function of a ``Request``) without Starlette's
per-route wrapper, which builds a second ``Request`` view and wraps ``send`` to hand
exceptions to handlers that the application's one layer (``layer.py``) already applies.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence

from starlette._utils import get_route_path
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

_DEPTH = 2


async def _probe(_request: Request) -> Response:
    return Response()  # pragma: no cover - never called: its wrapper's code is the point


# Starlette's wrapper of a function endpoint: a route whose ``app`` runs this code has no
# middleware of its own, so serving its endpoint directly changes nothing else.
_WRAPPER_CODE = getattr(request_response(_probe), "__code__", None)


def lean_app(endpoint: Callable[[Request], Awaitable[Response]]) -> ASGIApp:
    """An async function endpoint as an ASGI app: the request in, its response out.
    Exceptions go up to the application's layer, which renders them."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await endpoint(Request(scope, receive, send))
        await response(scope, receive, send)

    return app


def _served_app(route: BaseRoute) -> ASGIApp | None:
    """The lean app of a plain async route, or ``None`` to let the route handle itself."""
    if (
        isinstance(route, Route)
        and getattr(route.app, "__code__", None) is _WRAPPER_CODE
        and inspect.iscoroutinefunction(route.endpoint)
    ):
        return lean_app(route.endpoint)
    return None


def literal_start(route: BaseRoute) -> tuple[str, ...]:
    """The leading segments of ``route``'s path that hold no parameter (at most two)."""
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return ()
    literal: list[str] = []
    for segment in path.split("/")[1 : _DEPTH + 1]:
        if "{" in segment or not segment:
            break
        literal.append(segment)
    return tuple(literal)


def reserve_literal_paths(routes: Sequence[BaseRoute]) -> None:
    """A path that a route names literally is that route's alone: a route with a parameter
    in its place (``/v1/artifacts/{aid}``) stops matching it, so another method on
    ``/v1/artifacts/download-urls`` is a 405, not a malformed id. Idempotent."""
    literal = [r.path for r in routes if isinstance(r, Route) and "{" not in r.path]
    for route in routes:
        if not isinstance(route, Route) or "{" not in route.path:
            continue
        taken = [path for path in literal if route.path_regex.match(path)]
        if taken and not route.path_regex.pattern.startswith("(?!"):
            exclude = "|".join(re.escape(path) for path in taken)
            route.path_regex = re.compile(f"(?!(?:{exclude})$){route.path_regex.pattern}")


class IndexedRouter(Router):
    """``Router`` with the same behaviour, matching a request against its candidates only."""

    def __init__(self, routes: Sequence[BaseRoute], **options: object) -> None:
        super().__init__(list(routes), **options)  # type: ignore[arg-type]
        reserve_literal_paths(self.routes)
        filed: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, route in enumerate(self.routes):
            filed[literal_start(route)].append(index)
        anywhere = filed.get((), [])

        def in_order(*groups: Sequence[int]) -> tuple[BaseRoute, ...]:
            return tuple(self.routes[i] for i in sorted({i for g in groups for i in g}))

        self._by_first = {
            key[0]: in_order(indexes, anywhere) for key, indexes in filed.items() if len(key) == 1
        }
        self._by_two = {
            key: in_order(indexes, filed.get(key[:1], []), anywhere)
            for key, indexes in filed.items()
            if len(key) == 2
        }
        self._anywhere = in_order(anywhere)
        # By ``id``: routes compare by value and are not hashable.
        self._apps = {id(r): app for r in self.routes if (app := _served_app(r)) is not None}
        # Routes whose matching is ``Route.matches`` itself, which ``resolve`` inlines.
        self._plain = {
            id(r): r
            for r in self.routes
            if isinstance(r, Route) and type(r).matches is Route.matches
        }

    def candidates(self, path: str) -> tuple[BaseRoute, ...]:
        """The routes that could match ``path``, in their declared order."""
        segments = path.split("/", _DEPTH + 1)[1 : _DEPTH + 1]
        if len(segments) == _DEPTH:
            found = self._by_two.get((segments[0], segments[1]))
            if found is not None:
                return found
        if segments:
            return self._by_first.get(segments[0], self._anywhere)
        return self._anywhere

    def resolve(self, scope: Scope) -> tuple[BaseRoute | None, Match, Scope]:
        """The route a full scan would hand the HTTP request to: the first full match, else
        the first partial one (a 405), with its child scope; ``(None, Match.NONE, {})``
        when none matches (the redirect or the 404 are ``Router``'s)."""
        path = get_route_path(scope)
        method = scope["method"]
        partial: tuple[BaseRoute | None, Match, Scope] = (None, Match.NONE, {})
        for route in self.candidates(path):
            plain = self._plain.get(id(route))
            if plain is None:
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    return route, match, child_scope
                if match is Match.PARTIAL and partial[0] is None:
                    partial = (route, match, child_scope)
                continue
            # ``Route.matches``, inlined: the path from above, no scope built for a miss.
            found = plain.path_regex.match(path)
            if found is None:
                continue
            params = found.groupdict()
            for key, value in params.items():
                params[key] = plain.param_convertors[key].convert(value)
            path_params = dict(scope.get("path_params", {}))
            path_params.update(params)
            child_scope = {"endpoint": plain.endpoint, "path_params": path_params}
            if not plain.methods or method in plain.methods:
                return route, Match.FULL, child_scope
            if partial[0] is None:
                partial = (route, Match.PARTIAL, child_scope)
        return partial

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch an HTTP request to the route ``resolve`` finds; anything else (the
        lifespan, a request no route matches) as ``Router`` does."""
        if scope["type"] != "http":
            await super().app(scope, receive, send)
            return
        scope.setdefault("router", self)
        route, match, child_scope = self.resolve(scope)
        if route is None:
            await super().app(scope, receive, send)  # the redirect or the 404, after a full scan
            return
        scope["route"] = route
        scope.update(child_scope)
        # A full match of a plain route: its method is one it serves.
        app = self._apps.get(id(route)) if match is Match.FULL else None
        if app is None:
            await route.handle(scope, receive, send)
        else:
            await app(scope, receive, send)
