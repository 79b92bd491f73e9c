"""The application's one layer: request id, CORS, gzip and error rendering together, on
every kind of answer (success, refusal, router refusal, preflight, failure), and the
middleware an embedder adds still runs inside it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strongroom.adapters.webkit import errors
from strongroom.domain.errors import UnauthenticatedError
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import MemberWorkspace
from strongroom.ports.driving import Strongroom
from support.world import Api, bearer, make_client, make_facade

ORIGIN = "https://console.example.com"
FROM_ORIGIN = {"Origin": ORIGIN, "X-Request-ID": "trace-7"}


@pytest.fixture
def cors_api(facade: Strongroom) -> Iterator[Api]:
    with make_client(facade, cors_origins=(ORIGIN,)) as client:
        yield Api(facade, client)


def request_ids(headers: object) -> list[str]:
    """Every ``X-Request-ID`` line of a response."""
    return headers.get_list("x-request-id")  # type: ignore[attr-defined, no-any-return]


class TestCorsOnEveryAnswer:
    """An allowed origin may read refusals as well as successes, each with one request id."""

    def test_refusals_are_readable_and_carry_one_request_id(self, cors_api: Api) -> None:
        """A 401, a path id's 400, the router's 404 and 405: CORS headers, ``Vary:
        Origin``, the client's request id once, and the same id in the envelope."""
        for method, path in (
            ("GET", "/v1/me"),
            ("GET", "/v1/backups/not-a-uuid"),
            ("GET", "/v1/no-such-route"),
            ("PUT", "/v1/me"),
        ):
            response = cors_api.client.request(method, path, headers=FROM_ORIGIN)
            assert response.status_code >= 400, (method, path)
            assert response.headers["access-control-allow-origin"] == ORIGIN
            assert "origin" in response.headers["vary"].lower()
            assert request_ids(response.headers) == ["trace-7"]
            assert response.json()["error"]["request_id"] == "trace-7"

    def test_a_preflight_carries_the_clients_request_id_once(self, cors_api: Api) -> None:
        response = cors_api.client.options(
            "/v1/me", headers={**FROM_ORIGIN, "Access-Control-Request-Method": "GET"}
        )
        assert response.status_code == 204
        assert request_ids(response.headers) == ["trace-7"]
        assert response.headers["vary"] == "Origin"

    def test_an_unhandled_failure_is_the_500_envelope_with_the_id(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Whatever the request asked for (an origin, gzip), a bug is the logged 500
        ``internal`` with the request id, not a dropped connection."""
        broken = make_facade()

        def explode(_caller: Caller, _page: PageRequest) -> Page[MemberWorkspace]:
            raise RuntimeError("simulated bug")

        monkeypatch.setattr(broken.workspaces, "memberships", explode)
        with make_client(broken, cors_origins=(ORIGIN,)) as client:
            token = Api(broken, client).person("z@example.com")
            response = client.get(
                "/v1/workspaces",
                headers={**bearer(token), **FROM_ORIGIN, "Accept-Encoding": "gzip"},
            )
        assert response.status_code == 500
        assert response.json()["error"]["code"] == "internal"
        assert response.json()["error"]["request_id"] == "trace-7"
        assert request_ids(response.headers) == ["trace-7"]


class TestGzipWithCors:
    """A compressed answer to an allowed origin says both in ``Vary``."""

    def test_a_large_list_is_compressed_and_readable(self, cors_api: Api) -> None:
        token, workspace_id = cors_api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}/backups"
        for number in range(20):
            body = {"name": f"backup-{number}", "kind": "manual"}
            assert cors_api.client.post(path, json=body, headers=bearer(token)).status_code == 201
        headers = {**bearer(token), **FROM_ORIGIN, "Accept-Encoding": "gzip"}
        with cors_api.client.stream("GET", path, headers=headers) as response:
            sent = b"".join(response.iter_raw())
        assert response.headers["content-encoding"] == "gzip"
        assert int(response.headers["content-length"]) == len(sent)
        assert len(gzip.decompress(sent)) > len(sent)
        assert response.headers["vary"] == "Accept-Encoding, Origin"
        assert response.headers["access-control-allow-origin"] == ORIGIN
        assert request_ids(response.headers) == ["trace-7"]


class Stamp:
    """An embedder's middleware: marks every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-stamp", b"1")]
            await send(message)

        await self.app(scope, receive, stamped)


def test_middleware_an_embedder_adds_runs_inside_the_layer(facade: Strongroom) -> None:
    """``add_middleware`` still works: its header is on answers and refusals alike, which
    also carry the request id."""
    client = make_client(facade)
    client.app.add_middleware(Stamp)  # type: ignore[attr-defined]
    with client:
        for path, status in (("/healthz", 200), ("/v1/me", 401), ("/nowhere", 404)):
            response = client.get(path)
            assert response.status_code == status
            assert response.headers["x-stamp"] == "1"
            assert response.headers["x-request-id"].startswith("req_")


def test_repeated_answers_do_not_accumulate_headers(cors_api: Api) -> None:
    """An answer the application reuses (the liveness probe's) gets the layer's headers
    afresh each time, never on top of the previous request's."""
    for number in range(3):
        response = cors_api.client.get(
            "/healthz", headers={"Origin": ORIGIN, "X-Request-ID": f"n{number}"}
        )
        assert request_ids(response.headers) == [f"n{number}"]
        assert response.headers.get_list("access-control-allow-origin") == [ORIGIN]
        assert response.headers["vary"] == "Origin"


class TestErrorBodies:
    """Error envelopes are encoded whatever text their message holds."""

    @given(message=st.text(st.characters(exclude_categories=())))
    @example(message="unknown field: \ud800")
    def test_any_message_renders_as_its_envelope(self, message: str) -> None:
        """Any text, a lone surrogate included (which orjson refuses), gives a JSON
        envelope that reads back as the message."""
        app = Starlette()
        request = Request({"type": "http", "method": "GET", "path": "/", "headers": [], "app": app})
        response = errors.error_response(request, 409, "conflict", message)
        envelope = json.loads(bytes(response.body))
        assert envelope["error"]["code"] == "conflict"
        assert envelope["error"]["message"] == message


def test_handlers_an_embedder_adds_answer_their_errors(facade: Strongroom) -> None:
    """``add_exception_handler`` still works, by exception class (over ours) and by the
    status of the router's refusals; their answers carry the request id."""

    async def teapot(_request: Request, _exc: Exception) -> Response:
        return PlainTextResponse("no credential here", status_code=418)

    async def lost(_request: Request, _exc: Exception) -> Response:
        return PlainTextResponse("lost", status_code=404)

    client = make_client(facade)
    client.app.add_exception_handler(UnauthenticatedError, teapot)  # type: ignore[attr-defined]
    client.app.add_exception_handler(404, lost)  # type: ignore[attr-defined]
    with client:
        refused = client.get("/v1/me")
        missing = client.get("/nowhere")
        not_allowed = client.put("/v1/me")
    assert (refused.status_code, refused.text) == (418, "no credential here")
    assert (missing.status_code, missing.text) == (404, "lost")
    assert not_allowed.status_code == 405
    assert not_allowed.json()["error"]["code"] == "invalid_request"
    for response in (refused, missing, not_allowed):
        assert response.headers["x-request-id"].startswith("req_")
