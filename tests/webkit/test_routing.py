"""The indexed router answers every path exactly as Starlette's full scan would."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.testclient import TestClient

from strongroom.adapters.http.app import ROUTES
from strongroom.adapters.webkit.routing import IndexedRouter

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


def full_scan(scope: dict[str, Any]) -> tuple[Any, Match, dict[str, Any]]:
    """What Starlette's scan of every route hands on: the route, the kind of match and the
    child scope (the endpoint and the path parameters)."""
    partial: tuple[Any, Match, dict[str, Any]] = (None, Match.NONE, {})
    for route in ROUTES:
        match, child_scope = route.matches(scope)
        if match is Match.FULL:
            return route, match, child_scope
        if match is Match.PARTIAL and partial[0] is None:
            partial = (route, match, child_scope)
    return partial


@given(method=st.sampled_from(METHODS), path=paths())
def test_resolving_finds_what_a_full_scan_finds(method: str, path: str) -> None:
    """The router's own matching (``Route.matches`` inlined) gives the same route, kind of
    match and path parameters as Starlette's scan, for real and bent paths."""
    request = scope(method, path)
    route, match, child_scope = ROUTER.resolve(request)
    expected_route, expected_match, expected_scope = full_scan(request)
    assert route is expected_route
    assert match is expected_match
    assert child_scope == expected_scope


async def echo(request: Request) -> Response:
    return JSONResponse(request.path_params)


def test_a_matched_route_is_served_and_a_partial_one_refused() -> None:
    """Through the router, a route's own path reaches its endpoint with its parameters; a
    method the path does not serve is the router's 405 (an ``HTTPException``)."""
    app = Starlette()
    app.router = IndexedRouter([Route("/items/{iid}", echo, methods=["GET"])])
    served = TestClient(app)
    answer = served.get("/items/a1")
    assert (answer.status_code, answer.json()) == (200, {"iid": "a1"})
    assert served.post("/items/a1").status_code == 405
    assert served.get("/items").status_code == 404
