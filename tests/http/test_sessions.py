"""Signing in, switching workspace, signing out and ``/v1/me`` (contract section 2)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.billing import BillingState
from strongroom.domain.permissions import Permission
from support.world import Api, bearer, idp_access_token, make_client, make_facade

RFC3339_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


def parse_time(text: str) -> datetime:
    """An RFC 3339 ``Z`` timestamp."""
    assert RFC3339_Z.fullmatch(text), text
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def is_unauthenticated(api: Api, token: str) -> bool:
    """Whether ``token`` is refused with 401 on ``/v1/me``."""
    response = api.client.get("/v1/me", headers=bearer(token))
    if response.status_code == 401:
        assert response.json()["error"]["code"] == "unauthenticated"
        return True
    assert response.status_code == 200, response.text
    return False


class TestSignIn:
    """``POST /v1/auth/sessions``."""

    def test_a_provider_token_is_exchanged_once(self, api: Api) -> None:
        """A second exchange of the same identity-provider token: 401 (contract 13)."""
        token = idp_access_token(api.facade, "ada@example.com")
        first = api.client.post("/v1/auth/sessions", headers=bearer(token))
        assert first.status_code == 201, first.text
        second = api.client.post("/v1/auth/sessions", headers=bearer(token))
        assert second.status_code == 401
        assert second.json()["error"]["code"] == "unauthenticated"

    def test_exchanges_an_idp_token_for_a_session(self, api: Api) -> None:
        """201 ``{token, expires_at, user, workspace_id: null}``; the token works."""
        access = idp_access_token(api.facade, "ada@example.com", "Ada Lovelace")
        before = datetime.now(UTC)
        response = api.client.post("/v1/auth/sessions", headers=bearer(access))
        assert response.status_code == 201, response.text
        body = response.json()
        assert set(body) == {"token", "expires_at", "user", "workspace_id"}
        assert body["token"].startswith("bks_")
        assert body["workspace_id"] is None
        assert parse_time(body["expires_at"]) > before + timedelta(days=1)
        assert set(body["user"]) == {"id", "email", "name"}
        assert body["user"]["email"] == "ada@example.com"
        assert body["user"]["name"] == "Ada Lovelace"
        UUID(body["user"]["id"])
        assert not is_unauthenticated(api, body["token"])

    def test_same_person_same_user(self, api: Api) -> None:
        """Signing in twice gives two sessions of the same user."""
        first = api.client.post(
            "/v1/auth/sessions", headers=bearer(idp_access_token(api.facade, "ada@example.com"))
        ).json()
        second = api.client.post(
            "/v1/auth/sessions", headers=bearer(idp_access_token(api.facade, "ada@example.com"))
        ).json()
        assert first["user"] == second["user"]
        assert first["token"] != second["token"]

    def test_invalid_idp_token_is_401(self, api: Api) -> None:
        """A forged, missing or non-IdP credential is 401 ``unauthenticated``."""
        session = api.person("ada@example.com")
        for headers in (
            {},
            bearer("bki_forged"),
            bearer(session),
            {"Authorization": "Basic abc"},
            {"Authorization": "Bearer "},
        ):
            response = api.client.post("/v1/auth/sessions", headers=headers)
            assert response.status_code == 401, response.text
            assert response.json()["error"]["code"] == "unauthenticated"

    def test_idp_token_is_no_v1_bearer(self, api: Api) -> None:
        """The identity provider's access token is refused everywhere but sign-in."""
        access = idp_access_token(api.facade, "ada@example.com")
        for method, path in (
            ("GET", "/v1/me"),
            ("GET", "/v1/workspaces"),
            ("GET", "/v1/permissions"),
            ("DELETE", "/v1/auth/sessions/current"),
        ):
            response = api.client.request(method, path, headers=bearer(access))
            assert response.status_code == 401
        assert api.client.post("/v1/auth/sessions", headers=bearer(access)).status_code == 201


class TestSwitch:
    """``POST /v1/auth/switch``."""

    def test_switch_scopes_a_new_session_and_revokes_the_old(self, api: Api) -> None:
        """201 with a scoped token of the same shape; the old token is 401 afterwards."""
        token = api.person("ada@example.com")
        created = api.client.post("/v1/workspaces", json={"name": "A"}, headers=bearer(token))
        workspace_id = created.json()["id"]
        response = api.client.post(
            "/v1/auth/switch", json={"workspace_id": workspace_id}, headers=bearer(token)
        )
        assert response.status_code == 201, response.text
        body = response.json()
        assert set(body) == {"token", "expires_at", "user", "workspace_id"}
        assert body["token"].startswith("bks_")
        assert body["workspace_id"] == workspace_id
        assert body["user"]["email"] == "ada@example.com"
        parse_time(body["expires_at"])
        assert is_unauthenticated(api, token)
        me = api.client.get("/v1/me", headers=bearer(body["token"])).json()
        assert me["workspace_id"] == workspace_id

    def test_switch_from_a_scoped_session(self, api: Api) -> None:
        """A scoped session may switch to another of the person's workspaces."""
        token, first = api.workspace_admin("ada@example.com", "First")
        second = api.client.post(
            "/v1/workspaces", json={"name": "Second"}, headers=bearer(token)
        ).json()["id"]
        response = api.client.post(
            "/v1/auth/switch", json={"workspace_id": second}, headers=bearer(token)
        )
        assert response.status_code == 201
        assert response.json()["workspace_id"] == second
        assert is_unauthenticated(api, token)
        assert str(first) != second

    def test_switch_into_a_foreign_workspace_is_404_and_revokes_nothing(self, api: Api) -> None:
        """Not a member (or no such workspace): 404, and the old token still works."""
        _, foreign = api.workspace_admin("eve@example.com", "Eve's")
        token = api.person("ada@example.com")
        for workspace_id in (str(foreign), str(uuid4())):
            response = api.client.post(
                "/v1/auth/switch", json={"workspace_id": workspace_id}, headers=bearer(token)
            )
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "not_found"
            assert not is_unauthenticated(api, token)

    def test_switch_needs_a_session(self, api: Api) -> None:
        """Without a credential the switch is 401, whatever the body."""
        response = api.client.post("/v1/auth/switch", json={"workspace_id": "nope"})
        assert response.status_code == 401


class TestSignOut:
    """``DELETE /v1/auth/sessions/current``."""

    def test_sign_out_ends_only_that_session(self, api: Api) -> None:
        """204 with no body; that token is 401 afterwards, the person's other session works."""
        first = api.person("ada@example.com")
        second = api.person("ada@example.com")
        response = api.client.delete("/v1/auth/sessions/current", headers=bearer(first))
        assert response.status_code == 204
        assert response.content == b""
        assert is_unauthenticated(api, first)
        assert not is_unauthenticated(api, second)
        again = api.client.delete("/v1/auth/sessions/current", headers=bearer(first))
        assert again.status_code == 401

    def test_sign_out_of_a_scoped_session(self, api: Api) -> None:
        """A scoped session signs out the same way, even in a blocked workspace."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        assert (
            api.client.delete("/v1/auth/sessions/current", headers=bearer(token)).status_code == 204
        )
        assert is_unauthenticated(api, token)


class TestMe:
    """``GET /v1/me``."""

    def test_unscoped_session(self, api: Api) -> None:
        """``{principal, user, workspace_id: null, permissions: []}``."""
        access = idp_access_token(api.facade, "ada@example.com", "Ada")
        session = api.client.post("/v1/auth/sessions", headers=bearer(access)).json()
        response = api.client.get("/v1/me", headers=bearer(session["token"]))
        assert response.status_code == 200
        assert response.json() == {
            "principal": {"type": "user", "id": session["user"]["id"]},
            "user": {"id": session["user"]["id"], "email": "ada@example.com", "name": "Ada"},
            "workspace_id": None,
            "permissions": [],
        }

    def test_scoped_admin_session(self, api: Api) -> None:
        """A scoped admin session holds every permission of the catalog."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        me = api.client.get("/v1/me", headers=bearer(token)).json()
        assert set(me) == {"principal", "user", "workspace_id", "permissions"}
        assert me["principal"] == {"type": "user", "id": me["user"]["id"]}
        assert me["workspace_id"] == str(workspace_id)
        assert me["permissions"] == sorted(p.value for p in Permission)

    def test_me_needs_a_credential(self, api: Api) -> None:
        """Without a bearer: 401."""
        for headers in ({}, bearer("bks_x"), {"Authorization": "Token abc"}):
            response = api.client.get("/v1/me", headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "unauthenticated"


def test_sessions_expire(clock_api: tuple[Api, ManualClock]) -> None:
    """A session is refused (401) once its ``expires_at`` has passed."""
    api, clock = clock_api
    session = api.client.post(
        "/v1/auth/sessions", headers=bearer(idp_access_token(api.facade, "ada@example.com"))
    ).json()
    expires_at = parse_time(session["expires_at"])
    clock.advance(expires_at - clock.now() - timedelta(seconds=1))
    assert not is_unauthenticated(api, session["token"])
    clock.advance(timedelta(seconds=1))
    assert is_unauthenticated(api, session["token"])


@pytest.fixture
def clock_api() -> Iterator[tuple[Api, ManualClock]]:
    """An API over a facade on a manual clock."""
    clock = ManualClock()
    facade = make_facade(clock=clock)
    with make_client(facade) as client:
        yield Api(facade, client), clock
