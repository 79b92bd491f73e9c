"""Signing in, switching workspace, signing out and ``/v1/me`` over HTTP (contract section
2): wire shapes and status codes. The session rules (one exchange per provider token,
expiry, switching, signing out): ``tests/usecases/test_session_rules.py`` and
``tests/usecases/test_workspaces_and_sessions.py::TestSessions``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from uuid import UUID

from strongroom.domain.permissions import Permission
from support.world import Api, bearer, idp_access_token

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

    def test_a_keyed_exchange_repeated_gets_the_first_answer(self, api: Api) -> None:
        """The same token and Idempotency-Key again: the first 201 unchanged (the token was
        spent by the first exchange); without the key: 401 (issue 27, finding 10)."""
        access = idp_access_token(api.facade, "ada@example.com", "Ada")
        keyed = {**bearer(access), "Idempotency-Key": "sign-in-1"}
        first = api.client.post("/v1/auth/sessions", headers=keyed)
        assert first.status_code == 201, first.text
        again = api.client.post("/v1/auth/sessions", headers=keyed)
        assert again.status_code == 201, again.text
        assert again.json() == first.json()
        assert api.client.post("/v1/auth/sessions", headers=bearer(access)).status_code == 401

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

    def test_a_keyed_switch_repeated_gets_the_first_answer(self, api: Api) -> None:
        """The same session and Idempotency-Key again: the first 201 unchanged, although the
        switch revoked that session; without the key: 401 (issue 27, finding 10)."""
        token = api.person("ada@example.com")
        created = api.client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token))
        body = {"workspace_id": created.json()["id"]}
        keyed = {**bearer(token), "Idempotency-Key": "switch-1"}
        first = api.client.post("/v1/auth/switch", json=body, headers=keyed)
        assert first.status_code == 201, first.text
        again = api.client.post("/v1/auth/switch", json=body, headers=keyed)
        assert again.status_code == 201, again.text
        assert again.json() == first.json()
        assert (
            api.client.post("/v1/auth/switch", json=body, headers=bearer(token)).status_code == 401
        )

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
