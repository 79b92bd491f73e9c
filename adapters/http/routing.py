"""A Starlette router that tries only the routes a path could match.

Starlette's ``Router`` tries every route in order, one regular expression each, until one
matches: with some seventy routes, a request for a route near the end pays for all of
them. ``IndexedRouter`` files each route under the literal segments its path starts with
(``/v1/backups/{bid}`` under ``("v1", "backups")``), and a request tries only the routes
filed under its own first two segments, under its first segment alone, and those with no
literal start, in their declared order. No other route could match the path, so the
outcome (the route, a 405 for a partial match, the trailing-slash redirect, the 404) is
the one Starlette's scan would give.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Receive, Scope, Send

_DEPTH = 2


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


class IndexedRouter(Router):
    """``Router`` with the same behaviour, matching a request against its candidates only."""

    def __init__(self, routes: Sequence[BaseRoute], **options: object) -> None:
        super().__init__(list(routes), **options)  # type: ignore[arg-type]
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

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch an HTTP request among its candidates; anything else (the lifespan, a
        request no candidate matches) as ``Router`` does."""
        if scope["type"] != "http":
            await super().app(scope, receive, send)
            return
        scope.setdefault("router", self)
        partial = None
        partial_scope: Any = {}
        for route in self.candidates(get_route_path(scope)):
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope["route"] = route
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
            if match is Match.PARTIAL and partial is None:
                partial, partial_scope = route, child_scope
        if partial is not None:
            scope["route"] = partial
            scope.update(partial_scope)
            await partial.handle(scope, receive, send)
            return
        await super().app(scope, receive, send)  # the redirect or the 404, after a full scan
