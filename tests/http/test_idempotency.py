"""``Idempotency-Key`` on creating POSTs (contract sections 8 and 10)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from support.world import Api, bearer, idp_access_token, make_client, make_facade


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


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves."""
    return ManualClock()


@pytest.fixture
def timed(clock: ManualClock) -> Iterator[Api]:
    """An API over a facade that runs on ``clock``."""
    facade = make_facade(clock=clock)
    with make_client(facade) as client:
        yield Api(facade, client)


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

    def test_replay_outlives_the_quota(self, api: Api) -> None:
        """The replay of a creation returns 201 even when the quota is now full."""
        token = api.person("ada@example.com")
        first = create(api, token, "W0", "k0")
        for number in range(1, 5):
            create(api, token, f"W{number}", None)
        assert create(api, token, "W5", None).status_code == 409
        replay = create(api, token, "W0", "k0")
        assert replay.status_code == 201
        assert replay.json() == first.json()

    def test_without_a_key_nothing_is_deduplicated(self, api: Api) -> None:
        """Two creations without a key create two workspaces."""
        token = api.person("ada@example.com")
        create(api, token, "Acme", None)
        create(api, token, "Acme", None)
        assert names(api, token) == ["Acme", "Acme"]

    def test_failed_request_does_not_hold_the_key(self, api: Api) -> None:
        """A refused creation stores nothing: the key can be used once the request is
        fixed."""
        token = api.person("ada@example.com")
        assert create(api, token, "", "k").status_code == 400
        assert create(api, token, "Acme", "k").status_code == 201

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

    def test_another_person_may_reuse_a_key(self, api: Api) -> None:
        """Two people using the same key each get their own workspace."""
        ada = api.person("ada@example.com")
        bob = api.person("bob@example.com")
        first = create(api, ada, "Acme", "shared")
        second = create(api, bob, "Acme", "shared")
        assert first.status_code == second.status_code == 201
        assert first.json()["id"] != second.json()["id"]
        assert create(api, bob, "Other", "shared").status_code == 409
        assert names(api, ada) == ["Acme"]
        assert names(api, bob) == ["Acme"]

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

    def test_the_same_key_on_another_route_is_independent(self, api: Api) -> None:
        """A key used to create a workspace can be used on switch (another route)."""
        token = api.person("ada@example.com")
        workspace_id = create(api, token, "Acme", "k").json()["id"]
        switched = api.client.post(
            "/v1/auth/switch",
            json={"workspace_id": workspace_id},
            headers={**bearer(token), "Idempotency-Key": "k"},
        )
        assert switched.status_code == 201, switched.text
        assert switched.json()["workspace_id"] == workspace_id


class TestLifetime:
    """Keys are remembered for 24 hours."""

    def test_key_replays_within_24_hours(self, timed: Api, clock: ManualClock) -> None:
        """Just before 24 h the key still replays."""
        token = timed.person("ada@example.com")
        first = create(timed, token, "Acme", "k")
        clock.advance(timedelta(hours=24) - timedelta(seconds=1))
        assert create(timed, token, "Acme", "k").json() == first.json()
        assert create(timed, token, "Other", "k").status_code == 409

    def test_key_is_free_after_24_hours(self, timed: Api, clock: ManualClock) -> None:
        """After 24 h the same key creates again, with the same or another body."""
        token = timed.person("ada@example.com")
        first = create(timed, token, "Acme", "k")
        clock.advance(timedelta(hours=24, seconds=1))
        second = create(timed, token, "Acme", "k")
        assert second.status_code == 201
        assert second.json()["id"] != first.json()["id"]
        assert create(timed, token, "Acme", "k").json() == second.json()
        clock.advance(timedelta(hours=25))
        third = create(timed, token, "Other", "k")
        assert third.status_code == 201, third.text
        ids = {UUID(first.json()["id"]), UUID(second.json()["id"]), UUID(third.json()["id"])}
        assert len(ids) == 3
