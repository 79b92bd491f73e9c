"""The indexed router answers every path exactly as Starlette's full scan would."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import BaseRoute, Match

from strongroom.adapters.http.app import ROUTES
from strongroom.adapters.http.routing import IndexedRouter

METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"]
SEGMENT = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.~%", min_size=0, max_size=12)


def first_match(routes: list[BaseRoute] | tuple[BaseRoute, ...], scope: dict[str, Any]) -> Any:
    """The route Starlette's scan hands the request to: the first full match, else the
    first partial one (a 405), else None."""
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def templates() -> list[str]:
    return sorted({route.path for route in ROUTES if isinstance(getattr(route, "path", None), str)})


@st.composite
def paths(draw: st.DrawFn) -> str:
    """A route's template with its parameters filled, sometimes bent (a segment changed,
    added or dropped, a trailing slash), or a path of random segments."""
    if draw(st.booleans()):
        return "/" + "/".join(draw(st.lists(SEGMENT, max_size=5)))
    template = draw(st.sampled_from(templates()))
    filled = re.sub(r"\{[^}]+\}", lambda _: draw(SEGMENT.filter(bool)), template)
    segments = filled.split("/")
    bend = draw(st.sampled_from(["none", "change", "add", "drop", "slash"]))
    if bend == "change" and len(segments) > 1:
        segments[draw(st.integers(1, len(segments) - 1))] = draw(SEGMENT)
    elif bend == "add":
        segments.append(draw(SEGMENT))
    elif bend == "drop" and len(segments) > 2:
        segments.pop()
    elif bend == "slash":
        segments.append("")
    return "/".join(segments)


ROUTER = IndexedRouter(ROUTES)


@given(method=st.sampled_from(METHODS), path=paths())
def test_the_candidates_hold_the_route_a_full_scan_finds(method: str, path: str) -> None:
    request = scope(method, path)
    assert first_match(ROUTER.candidates(path), request) is first_match(ROUTES, request)


def test_every_route_is_found_by_its_own_path() -> None:
    for route in ROUTES:
        template, methods = getattr(route, "path", None), getattr(route, "methods", None)
        if not isinstance(template, str) or not methods:
            continue
        path = re.sub(r"\{[^}]+\}", "x1", template)
        for method in methods:
            request = scope(method, path)
            found = first_match(ROUTER.candidates(path), request)
            assert found is not None, (method, path)
            assert found is first_match(ROUTES, request), (method, path)


def test_a_request_tries_few_routes() -> None:
    # The point of the index: a backup's read does not try every route of the API.
    assert len(ROUTER.candidates("/v1/backups/x1")) < len(ROUTES) // 4
