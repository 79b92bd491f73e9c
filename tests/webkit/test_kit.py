"""The web kit on its own: a small application made of its parts only (the route DSL, the
indexed router, the one layer), no Strongroom routes and no facade behind it.

What the kit promises every adapter that uses it: the values a handler names arrive in
the contract's order of checks (path ids before the body), every answer names one request
id, gzip for JSON and text of 1 KiB and more, CORS for the configured origins only, and
the error families rendered as the API's envelope.
"""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import attrs
import pytest
from starlette.datastructures import State
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from strongroom.adapters.metrics.http import HttpMetrics
from strongroom.adapters.webkit import errors
from strongroom.adapters.webkit.declare import Auth, Routes
from strongroom.adapters.webkit.layer import HttpLayer
from strongroom.adapters.webkit.routing import IndexedRouter
from strongroom.domain.errors import ConflictError, StrongroomError

ORIGIN = "https://console.example.com"
LARGE = "x" * 2048


@attrs.frozen
class Note:
    """A note."""

    text: str


routes = Routes("Notes", auth=Auth.NONE)


@routes.patch("/notes/{id}", Note, "The note.", tagged=False)
async def update_note(id: UUID, body: Note) -> Note:
    """Change a note"""
    return Note(f"{id}:{body.text}")


@routes.action("/notes/{id}/archive", None, "Archived.")
async def archive_note(id: UUID) -> None:
    """Archive a note"""
    raise ConflictError(f"note {id} is archived already")


async def small(_request: Request) -> Response:
    return JSONResponse({"text": "short"})


async def large(_request: Request) -> Response:
    return JSONResponse({"text": LARGE})


async def stream(_request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        yield LARGE.encode()

    return StreamingResponse(chunks(), media_type="text/plain")


async def boom(_request: Request) -> Response:
    raise RuntimeError("a bug")


class InApplication:
    """What a Starlette application and its lifespan give every request: the application
    (its state and routes, read by the error answers) and a facade in the request's state
    (the kit's context reads it; these handlers never use it)."""

    def __init__(self, app: ASGIApp, routes: list[Any]) -> None:
        self.app = app
        self.application = SimpleNamespace(state=State(), routes=routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self.application
        scope.setdefault("state", {})["facade"] = object()
        await self.app(scope, receive, send)


@pytest.fixture
def client() -> Iterator[TestClient]:
    router = IndexedRouter(
        [
            *routes,
            Route("/small", small),
            Route("/large", large),
            Route("/stream", stream),
            Route("/boom", boom),
            Route("/text", lambda _r: PlainTextResponse(LARGE)),
        ]
    )
    handlers: dict[type[Exception], Any] = {
        StrongroomError: errors.strongroom_error,
        HTTPException: errors.http_error,
    }
    layer = HttpLayer(router, metrics=HttpMetrics(), handlers=handlers, cors_origins=(ORIGIN,))
    app = InApplication(layer, router.routes)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


NOTE = "/notes/00000000-0000-0000-0000-000000000001"


class TestDeclaredHandlers:
    def test_the_handler_gets_its_path_id_and_body_and_its_answer_is_presented(
        self, client: TestClient
    ) -> None:
        response = client.patch(NOTE, json={"text": "hi"})
        assert response.status_code == 200
        assert response.json() == {"text": "00000000-0000-0000-0000-000000000001:hi"}

    def test_a_malformed_path_id_is_refused_before_the_body_is_read(
        self, client: TestClient
    ) -> None:
        response = client.patch("/notes/not-a-uuid", content=b"not json")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "id in the path is not a UUID"

    def test_a_malformed_body_is_invalid_request(self, client: TestClient) -> None:
        response = client.patch(NOTE, json={"text": 1, "more": True})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"

    def test_an_action_refuses_a_body_other_than_an_empty_object(self, client: TestClient) -> None:
        refused = client.post(f"{NOTE}/archive", json={"force": True})
        assert refused.status_code == 400
        assert client.post(f"{NOTE}/archive", json={}).status_code == 409

    def test_a_domain_error_is_its_envelope_with_the_request_id(self, client: TestClient) -> None:
        response = client.post(f"{NOTE}/archive", headers={"X-Request-ID": "abc-1"})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "conflict"
        assert response.json()["error"]["request_id"] == "abc-1"
        assert response.headers.get_list("x-request-id") == ["abc-1"]

    def test_the_route_carries_its_documented_operation(self) -> None:
        operations = {route.operation.operation_id: route.operation for route in routes}  # type: ignore[attr-defined]
        assert operations["updateNote"].body is Note
        assert operations["updateNote"].summary == "Change a note"
        assert operations["archiveNote"].body_required is False


class TestTransport:
    def test_a_generated_request_id_on_every_answer(self, client: TestClient) -> None:
        for path in ("/small", "/nowhere", "/boom"):
            assert client.get(path).headers["x-request-id"].startswith("req_")

    def test_an_unhandled_failure_is_the_500_envelope(self, client: TestClient) -> None:
        response = client.get("/boom")
        assert response.status_code == 500
        assert response.json()["error"]["code"] == "internal"

    def test_json_and_text_of_1_kib_and_more_are_gzipped(self, client: TestClient) -> None:
        for path in ("/large", "/text"):
            with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
                sent = b"".join(response.iter_raw())
            assert response.headers["content-encoding"] == "gzip"
            assert response.headers["vary"] == "Accept-Encoding"
            assert int(response.headers["content-length"]) == len(sent)
            assert LARGE.encode() in gzip.decompress(sent)

    @pytest.mark.parametrize(
        ("path", "accept"),
        [("/small", "gzip"), ("/stream", "gzip"), ("/large", "gzip;q=0"), ("/large", "br")],
    )
    def test_small_streamed_or_refused_answers_go_as_they_are(
        self, client: TestClient, path: str, accept: str
    ) -> None:
        response = client.get(path, headers={"Accept-Encoding": accept})
        assert "content-encoding" not in response.headers
        assert "vary" not in response.headers

    def test_an_allowed_origins_preflight_is_answered(self, client: TestClient) -> None:
        response = client.options(
            NOTE, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "PATCH"}
        )
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == ORIGIN
        assert "PATCH" in response.headers["access-control-allow-methods"]
        assert response.headers["vary"] == "Origin"

    def test_another_origins_preflight_reaches_the_router(self, client: TestClient) -> None:
        response = client.options(
            NOTE, headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
        )
        assert response.status_code == 405
        assert not any(name.startswith("access-control-") for name in response.headers)

    def test_an_allowed_origins_call_may_read_the_answer(self, client: TestClient) -> None:
        response = client.get("/small", headers={"Origin": ORIGIN})
        assert response.headers["access-control-allow-origin"] == ORIGIN
        assert "x-request-id" in response.headers["access-control-expose-headers"].lower()
        assert response.headers["vary"] == "Origin"
