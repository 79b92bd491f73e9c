"""The error envelope, the router's own refusals, path ids and the order of checks
(contract sections 1, 7 and 10)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any, Self
from uuid import UUID, uuid4

import pytest
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import Message

from strongroom.adapters.http.app import app_for
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.webkit import errors
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import StrongroomError
from strongroom.domain.workspaces import Membership, Workspace
from strongroom.ports.driving import Strongroom
from support.checks import assert_error
from support.world import Api, bearer, make_client, make_facade

# The code tables of api-spec.md section 7 and contract.md section 1.
STATUS = {
    "invalid_request": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "wrong_workspace": 403,
    "not_found": 404,
    "conflict": 409,
    "quota_exceeded": 409,
    "retention_immutable": 409,
    "artifact_locked": 409,
    "artifact_held": 409,
    "artifact_referenced": 409,
    "last_artifact": 409,
    "not_in_our_storage": 409,
    "name_taken": 409,
    "invalid_state": 409,
    "billing_restricted": 409,
    "last_admin": 409,
    "idempotency_conflict": 409,
    "artifact_missing": 409,
    "lock_exceeds_expiry": 422,
    "validation_failed": 422,
    "precondition_failed": 412,
    "rate_limited": 429,
    "internal": 500,
    "upstream_unavailable": 502,
}


def user_id_of(api: Api, token: str) -> UUID:
    """The user id behind a session token."""
    return UUID(api.client.get("/v1/me", headers=bearer(token)).json()["user"]["id"])


def member_token(api: Api, email: str, workspace_id: UUID, role: str) -> str:
    """A session of ``email`` scoped to ``workspace_id``, where they hold ``role``."""
    token = api.person(email)
    user_id = user_id_of(api, token)
    with api.facade.deps.uow() as uow:
        uow.memberships.add(Membership(workspace_id, user_id, role, datetime.now(UTC)))
        uow.commit()
    return api.switch(token, workspace_id)


class ExplodingWorkspaceReads:
    """A workspace repository whose ``get`` fails like a bug would (not a port error)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def get(self, workspace_id: UUID, *, for_update: bool = False) -> Workspace | None:
        """Fail."""
        raise RuntimeError("simulated bug: secret=hunter2")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ExplodingUnitOfWork(MemoryUnitOfWork):
    """The in-memory unit of work, with ``workspaces.get`` raising ``RuntimeError``."""

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        self.workspaces = ExplodingWorkspaceReads(self.workspaces)
        return self


@pytest.fixture
def exploding() -> Strongroom:
    """A facade whose workspace reads fail with an unexpected exception."""
    store = MemoryStore()
    return make_facade(uow=lambda: ExplodingUnitOfWork(store))


class TestEnvelope:
    """Every failure is ``{error: {code, message, request_id}}``."""

    def test_every_family_uses_the_nested_envelope(self, api: Api) -> None:
        """400, 401, 403, 404, 405 and 409 all answer the nested envelope, with the
        request id of the ``X-Request-ID`` header."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}"
        client = api.client
        assert_error(client.get(path), 401, "unauthenticated")
        assert_error(
            client.get("/v1/workspaces/nope", headers=bearer(token)), 400, "invalid_request"
        )
        assert_error(
            client.get(path, headers=bearer(api.person("bob@example.com"))), 403, "forbidden"
        )
        assert_error(
            client.get(f"/v1/workspaces/{uuid4()}", headers=bearer(token)), 404, "not_found"
        )
        assert_error(client.put(path, headers=bearer(token)), 405, "invalid_request")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        assert_error(
            client.patch(path, json={"name": "x"}, headers=bearer(token)), 409, "billing_restricted"
        )

    def test_no_detail_in_production(self, facade: Strongroom) -> None:
        """``error.detail`` never appears when the environment is ``production``."""
        with make_client(facade, environment="production") as client:
            api = Api(facade, client)
            token = api.person("ada@example.com")
            for response in (
                client.get("/v1/me"),
                client.get("/v1/workspaces/nope", headers=bearer(token)),
                client.get("/no/such/route"),
            ):
                assert "detail" not in response.json()["error"]


class TestInternalError:
    """An unhandled failure is 500 ``internal``, without a traceback."""

    def test_unexpected_exception_is_internal(self, exploding: Strongroom) -> None:
        """A ``RuntimeError`` deep in a use case gives 500 ``internal`` with the envelope;
        outside production ``detail`` names the exception, never a traceback."""
        with make_client(exploding) as client:
            token, workspace_id = Api(exploding, client).workspace_admin("ada@example.com")
            response = client.get(f"/v1/workspaces/{workspace_id}", headers=bearer(token))
        error = assert_error(response, 500, "internal")
        assert "Traceback" not in response.text
        assert 'File "' not in response.text
        assert error["detail"] == "RuntimeError: simulated bug: secret=hunter2"

    def test_production_hides_the_cause(self, exploding: Strongroom) -> None:
        """In production the 500 says nothing about the exception."""
        with make_client(exploding, environment="production") as client:
            token, workspace_id = Api(exploding, client).workspace_admin("ada@example.com")
            response = client.get(
                f"/v1/workspaces/{workspace_id}",
                headers={**bearer(token), "X-Request-ID": "boom-1"},
            )
        error = assert_error(response, 500, "internal")
        assert "detail" not in error
        assert "RuntimeError" not in response.text
        assert "hunter2" not in response.text
        assert error["request_id"] == "boom-1"


def _asgi_call(facade: Strongroom, messages: list[Message]) -> list[Message]:
    """Run one ``POST /v1/workspaces`` through the app of ``facade`` at the ASGI level (its
    lifespan's state given by hand), the client sending ``messages`` (then nothing but
    ``http.disconnect``); what the app sent back. Raises what the app raises."""
    app = app_for(facade)
    path = "/v1/workspaces"
    pending = list(messages)
    sent: list[Message] = []

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"x-request-id", b"gone-1")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
        "state": {"facade": facade},
    }
    asyncio.run(app(scope, receive, send))
    return sent


class TestClientDisconnect:
    """Contract 13: a client that goes away mid-request is not an error in the logs."""

    def test_a_client_gone_mid_body_is_not_logged_as_an_error(
        self, facade: Strongroom, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The body stops half-way with ``http.disconnect``: nothing is logged at ERROR
        (no traceback), nothing propagates to the server (which would log it), and
        whatever is sent is a bare 400 with the request id."""
        half = {"type": "http.request", "body": b'{"name": "Ac', "more_body": True}
        with caplog.at_level(logging.DEBUG):
            sent = _asgi_call(facade, [half, {"type": "http.disconnect"}])
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
        assert all(r.exc_info is None for r in caplog.records)
        starts = [m for m in sent if m["type"] == "http.response.start"]
        assert [m["status"] for m in starts] == [400]
        assert (b"x-request-id", b"gone-1") in starts[0]["headers"]

    def test_a_whole_body_still_gets_an_answer(self, facade: Strongroom) -> None:
        """The same call with the body complete is answered as usual (here 401: no
        credential), so only a disconnect is quiet."""
        whole = {"type": "http.request", "body": b'{"name": "Acme"}', "more_body": False}
        sent = _asgi_call(facade, [whole])
        assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [401]

    def test_the_last_resort_handler_is_quiet_about_a_disconnect(
        self, facade: Strongroom, caplog: pytest.LogCaptureFixture
    ) -> None:
        """``internal_error``, should a ``ClientDisconnect`` reach it, answers a bare 400
        and logs nothing at ERROR; any other exception is still ``internal`` and logged."""
        request = Request(
            {
                "type": "http",
                "method": "POST",
                "path": "/v1/x",
                "headers": [],
                "app": app_for(facade),
            }
        )
        with caplog.at_level(logging.DEBUG):
            quiet = asyncio.run(errors.internal_error(request, ClientDisconnect()))
        assert quiet.status_code == 400
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
        with caplog.at_level(logging.DEBUG):
            loud = asyncio.run(errors.internal_error(request, RuntimeError("bug")))
        assert loud.status_code == 500
        assert [r.levelno for r in caplog.records if r.levelno >= logging.ERROR] == [logging.ERROR]


class TestRouter:
    """Unknown routes and wrong methods."""

    def test_unknown_route_is_404_envelope(self, api: Api) -> None:
        """A path no route serves: 404 ``not_found`` in the envelope."""
        assert_error(api.client.get("/v1/nothing-here"), 404, "not_found")
        assert_error(api.client.post("/v2/workspaces", json={}), 404, "not_found")

    @pytest.mark.parametrize(
        ("method", "path", "allowed"),
        [
            ("PUT", "/v1/workspaces", {"GET", "HEAD", "POST"}),
            ("POST", f"/v1/workspaces/{UUID(int=7)}", {"GET", "HEAD", "PATCH", "DELETE"}),
            ("POST", "/v1/me", {"GET", "HEAD"}),
            ("GET", "/v1/auth/switch", {"POST"}),
            ("DELETE", "/healthz", {"GET", "HEAD"}),
        ],
    )
    def test_wrong_method_is_405_with_allow(
        self, api: Api, method: str, path: str, allowed: set[str]
    ) -> None:
        """A method the path does not serve: 405 in the envelope, and ``Allow`` lists every
        method the path does serve (even when several routes share the path)."""
        response = api.client.request(method, path)
        assert_error(response, 405, "invalid_request")
        assert {m.strip() for m in response.headers["allow"].split(",")} == allowed


class TestPathIds:
    """A path id that is not a UUID."""

    def test_malformed_id_is_400(self, api: Api) -> None:
        """A non-UUID ``{wid}`` is 400 ``invalid_request`` on every workspace route."""
        token, _ = api.workspace_admin("ada@example.com")
        for method, path in (
            ("GET", "/v1/workspaces/42"),
            ("PATCH", "/v1/workspaces/not-a-uuid"),
            ("DELETE", "/v1/workspaces/not-a-uuid"),
            ("GET", "/v1/workspaces/42/quotas"),
            ("GET", "/v1/workspaces/42/audit"),
        ):
            response = api.client.request(method, path, json={"name": "x"}, headers=bearer(token))
            assert_error(response, 400, "invalid_request")

    def test_missing_credential_outranks_malformed_id(self, api: Api) -> None:
        """Without a credential the answer is 401, whatever the path id."""
        for path in ("/v1/workspaces/42", "/v1/workspaces/42/quotas", "/v1/workspaces/42/audit"):
            assert_error(api.client.get(path), 401, "unauthenticated")
            assert_error(
                api.client.get(path, headers=bearer("bks_not-a-token")), 401, "unauthenticated"
            )


class TestOrderOfChecks:
    """Contract section 1: the first failing check wins."""

    def test_malformed_id_outranks_unscoped_session(self, api: Api) -> None:
        """An unscoped session with a malformed id gets 400, not ``select a workspace first``."""
        token = api.person("ada@example.com")
        assert_error(
            api.client.get("/v1/workspaces/42", headers=bearer(token)), 400, "invalid_request"
        )

    def test_unscoped_session_must_select_a_workspace(self, api: Api) -> None:
        """An unscoped session on a ``{wid}`` route: 403 ``select a workspace first``, even
        for a workspace the person administers."""
        _, workspace_id = api.workspace_admin("ada@example.com")
        unscoped = api.person("ada@example.com")
        for method in ("GET", "PATCH", "DELETE"):
            response = api.client.request(
                method, f"/v1/workspaces/{workspace_id}", json={"name": 5}, headers=bearer(unscoped)
            )
            error = assert_error(response, 403, "forbidden")
            assert error["message"] == "select a workspace first"

    def test_other_workspace_of_a_member_is_wrong_workspace(self, api: Api) -> None:
        """A workspace the person belongs to, but not the session's: 403 ``wrong_workspace``."""
        token, first = api.workspace_admin("ada@example.com", "First")
        other = api.client.post("/v1/workspaces", json={"name": "Second"}, headers=bearer(token))
        second = other.json()["id"]
        for method, suffix in (
            ("GET", ""),
            ("PATCH", ""),
            ("DELETE", ""),
            ("GET", "/quotas"),
            ("GET", "/audit"),
        ):
            response = api.client.request(
                method, f"/v1/workspaces/{second}{suffix}", json={"bad": 1}, headers=bearer(token)
            )
            assert_error(response, 403, "wrong_workspace")
        assert first != second

    def test_foreign_workspace_is_identical_to_a_missing_one(self, api: Api) -> None:
        """Another person's workspace and a nonexistent one give the same 404 body."""
        token, _ = api.workspace_admin("ada@example.com")
        _, foreign = api.workspace_admin("eve@example.com", "Eve's")
        for suffix in ("", "/quotas", "/audit"):
            theirs = assert_error(
                api.client.get(f"/v1/workspaces/{foreign}{suffix}", headers=bearer(token)),
                404,
                "not_found",
            )
            missing = assert_error(
                api.client.get(f"/v1/workspaces/{uuid4()}{suffix}", headers=bearer(token)),
                404,
                "not_found",
            )
            assert theirs["message"] == missing["message"]
            assert set(theirs) == set(missing)

    def test_probing_a_foreign_workspace_is_not_audited(self, api: Api) -> None:
        """A refused attempt on a workspace the caller cannot see lands in no audit list."""
        token, _ = api.workspace_admin("ada@example.com")
        eve, foreign = api.workspace_admin("eve@example.com", "Eve's")
        api.client.patch(f"/v1/workspaces/{foreign}", json={"name": "x"}, headers=bearer(token))
        api.client.delete(f"/v1/workspaces/{foreign}", headers=bearer(token))
        events = api.client.get(f"/v1/workspaces/{foreign}/audit", headers=bearer(eve)).json()
        assert [e["outcome"] for e in events["data"]] == ["success", "success"]

    def test_missing_permission_names_the_slug(self, api: Api) -> None:
        """A viewer renaming or deleting the workspace: 403 ``missing permission
        workspaces:write``."""
        _, workspace_id = api.workspace_admin("ada@example.com")
        viewer = member_token(api, "vic@example.com", workspace_id, "viewer")
        path = f"/v1/workspaces/{workspace_id}"
        for response in (
            api.client.patch(path, json={"name": "Mine"}, headers=bearer(viewer)),
            api.client.delete(path, headers=bearer(viewer)),
        ):
            error = assert_error(response, 403, "forbidden")
            assert error["message"] == "missing permission workspaces:write"
        assert api.client.get(path, headers=bearer(viewer)).status_code == 200

    def test_missing_permission_outranks_malformed_body(self, api: Api) -> None:
        """A viewer PATCHing with a malformed body gets 403, not 400, and the denied attempt
        is audited with outcome ``denied``."""
        admin, workspace_id = api.workspace_admin("ada@example.com")
        viewer = member_token(api, "vic@example.com", workspace_id, "viewer")
        response = api.client.patch(
            f"/v1/workspaces/{workspace_id}",
            content=b"{not json",
            headers={**bearer(viewer), "content-type": "text/plain", "X-Request-ID": "deny-1"},
        )
        assert_error(response, 403, "forbidden")
        events = api.client.get(
            f"/v1/workspaces/{workspace_id}/audit",
            params={"action": "workspace.update"},
            headers=bearer(admin),
        ).json()["data"]
        assert len(events) == 1
        event = events[0]
        assert event["outcome"] == "denied"
        assert event["actor"] == {"type": "user", "id": str(user_id_of(api, viewer))}
        assert event["target"] == {"type": "workspace", "id": str(workspace_id)}
        assert event["request_id"] == "deny-1"
        assert event["changes"] is None

    def test_malformed_body_outranks_billing(self, api: Api) -> None:
        """An admin's malformed PATCH of a blocked workspace is 400, not 409."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        path = f"/v1/workspaces/{workspace_id}"
        assert_error(
            api.client.patch(path, json={"name": "ok", "x": 1}, headers=bearer(token)),
            400,
            "invalid_request",
        )
        assert_error(
            api.client.patch(path, json={"name": "\x00"}, headers=bearer(token)),
            400,
            "invalid_request",
        )
        assert_error(
            api.client.patch(path, json={"name": "ok"}, headers=bearer(token)),
            409,
            "billing_restricted",
        )


def every_error_class() -> list[type[StrongroomError]]:
    """Every concrete error the service can report."""
    found: list[type[StrongroomError]] = []
    pending: list[type[StrongroomError]] = [StrongroomError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda cls: cls.__name__)


def instance_of(cls: type[StrongroomError]) -> StrongroomError:
    """An instance of ``cls``, whatever its constructor takes."""
    for args in ((), ("something",), ("something", 5)):
        try:
            return cls(*args)
        except TypeError:
            continue
    raise AssertionError(f"cannot build {cls.__name__}")


@pytest.mark.parametrize("cls", every_error_class(), ids=lambda cls: cls.__name__)
def test_every_error_code_has_its_status(facade: Strongroom, cls: type[StrongroomError]) -> None:
    """Each domain error renders the envelope with the status of the contract's code table
    (``validation_failed`` 422, ``upstream_unavailable`` 502, ...)."""
    error = instance_of(cls)

    async def fail(_request: Request) -> Response:
        raise error

    app = app_for(facade)
    app.router.routes.append(Route("/boom", fail))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
    assert_error(response, STATUS[error.code], error.code)
    assert response.json()["error"]["message"] == error.message
