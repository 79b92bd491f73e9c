"""``Idempotency-Key`` on creating POSTs over HTTP (contract sections 8 and 10): the
header's parsing, the replayed bytes with the replay's own request id, what makes two
bodies one request, and sign-in's keys. The key's rules (quota, refusals, scope, 24 hours):
``tests/usecases/test_idempotency_rules.py``."""

from __future__ import annotations

from typing import Any

import pytest

from support.world import Api, bearer, idp_access_token


def create(api: Api, token: str, name: str, key: str | None, request_id: str | None = None) -> Any:
    """``POST /v1/workspaces`` with an optional key and request id."""
    headers = bearer(token)
    if key is not None:
        headers["Idempotency-Key"] = key
    if request_id is not None:
        headers["X-Request-ID"] = request_id
    return api.client.post("/v1/workspaces", json={"name": name}, headers=headers)


def names(api: Api, token: str) -> list[str]:
    """The names in the caller's workspace list."""
    listing = api.client.get("/v1/workspaces", headers=bearer(token)).json()
    return [item["name"] for item in listing["data"]]


class TestReplay:
    """Same key, same body: the first response again."""

    def test_replay_returns_the_first_response_with_its_own_request_id(self, api: Api) -> None:
        """Same status and body, nothing created twice; ``X-Request-ID`` is the replay's."""
        token = api.person("ada@example.com")
        first = create(api, token, "Acme", "key-1", "first-request")
        second = create(api, token, "Acme", "key-1", "second-request")
        assert first.status_code == second.status_code == 201
        assert second.content == first.content
        assert second.json() == first.json()
        assert first.headers["x-request-id"] == "first-request"
        assert second.headers["x-request-id"] == "second-request"
        assert second.headers["content-type"] == "application/json"
        assert names(api, token) == ["Acme"]

    def test_equal_bodies_in_another_spelling_replay(self, api: Api) -> None:
        """Key order and whitespace do not make a different request."""
        token = api.person("ada@example.com")
        headers = {**bearer(token), "Idempotency-Key": "k", "content-type": "application/json"}
        first = api.client.post("/v1/workspaces", content=b'{"name":"Acme"}', headers=headers)
        second = api.client.post(
            "/v1/workspaces", content=b'{ "name" : "Acme" }\n', headers=headers
        )
        assert second.json() == first.json()
        assert names(api, token) == ["Acme"]

    def test_sign_in_replay(self, api: Api) -> None:
        """Sign-in with the same key and body returns the same session."""
        headers = {"Idempotency-Key": "login-1"}
        first = api.client.post(
            "/v1/auth/sessions",
            headers={**bearer(idp_access_token(api.facade, "ada@example.com")), **headers},
        )
        second = api.client.post(
            "/v1/auth/sessions",
            headers={**bearer(idp_access_token(api.facade, "ada@example.com")), **headers},
        )
        assert first.status_code == second.status_code == 201
        assert second.json() == first.json()


class TestConflict:
    """Same key, different request."""

    def test_different_body_is_idempotency_conflict(self, api: Api) -> None:
        """409 ``idempotency_conflict``; nothing more is created."""
        token = api.person("ada@example.com")
        assert create(api, token, "Acme", "key-1").status_code == 201
        response = create(api, token, "Other", "key-1")
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "idempotency_conflict"
        assert error["request_id"] == response.headers["x-request-id"]
        assert names(api, token) == ["Acme"]

    @pytest.mark.parametrize("length", [256, 1000])
    def test_overlong_key_is_400(self, api: Api, length: int) -> None:
        """A key over 255 characters: 400 ``invalid_request``; nothing is created."""
        token = api.person("ada@example.com")
        response = create(api, token, "Acme", "k" * length)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        assert names(api, token) == []

    def test_key_of_255_is_accepted(self, api: Api) -> None:
        """255 characters is the longest key."""
        token = api.person("ada@example.com")
        assert create(api, token, "Acme", "k" * 255).status_code == 201

    def test_empty_key_is_400(self, api: Api) -> None:
        """An empty key is refused (keys are 1..255 characters)."""
        token = api.person("ada@example.com")
        assert create(api, token, "Acme", "").status_code == 400


class TestScope:
    """Keys belong to one principal and one route."""

    def test_sign_in_keys_are_per_person(self, api: Api) -> None:
        """Two people signing in with the same key each get a session of their own: a key
        never hands one person another's session."""
        headers = {"Idempotency-Key": "login"}
        ada = api.client.post(
            "/v1/auth/sessions",
            headers={**bearer(idp_access_token(api.facade, "ada@example.com")), **headers},
        )
        bob = api.client.post(
            "/v1/auth/sessions",
            headers={**bearer(idp_access_token(api.facade, "bob@example.com")), **headers},
        )
        assert ada.status_code == bob.status_code == 201
        assert bob.json()["user"]["email"] == "bob@example.com"
        assert bob.json()["token"] != ada.json()["token"]
        me = api.client.get("/v1/me", headers=bearer(bob.json()["token"])).json()
        assert me["user"]["email"] == "bob@example.com"
