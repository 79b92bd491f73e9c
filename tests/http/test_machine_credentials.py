"""HTTP tests of API keys and workers (api-spec 4-5, contract 2, 3 and 10).

The routes' wire shapes (the token shown once, reads without it), the status codes of
revocation, rotation and machine refusals, and stored replays. The rules (permissions that
never exceed the creator's, machines acting only in their workspace, quotas, billing, last
use, audit without secrets): ``tests/usecases/test_machine_rules.py`` and
``tests/usecases/test_machines.py``.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from strongroom.domain.permissions import WORKER_PERMISSIONS
from strongroom.domain.tokens import TokenKind, token_kind
from support.checks import assert_error
from support.world import Api, bearer, idp_access_token

RETENTION = {"expire_after": "P30D", "lock_for": "P7D"}


class Admin:
    """An admin's session scoped to their own workspace."""

    def __init__(self, api: Api, email: str, name: str = "Acme") -> None:
        self.api = api
        self.token, self.workspace_id = api.workspace_admin(email, name)
        self.headers = bearer(self.token)

    def key(self, permissions: list[str], name: str = "ci", **extra: Any) -> dict[str, Any]:
        """Create an API key and return the response body (with its token)."""
        response = self.api.client.post(
            "/v1/api-keys",
            json={"name": name, "permissions": permissions, **extra},
            headers=self.headers,
        )
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    def worker(self, name: str = "rack-1") -> dict[str, Any]:
        """Register a worker and return the response body (with its token)."""
        response = self.api.client.post("/v1/workers", json={"name": name}, headers=self.headers)
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    def local_backup(self, name: str, worker_id: str | None = None) -> dict[str, Any]:
        """A local backup, assigned to ``worker_id`` when given (then active)."""
        created = self.api.client.post(
            f"/v1/workspaces/{self.workspace_id}/backups",
            json={"name": name, "kind": "local"},
            headers=self.headers,
        )
        assert created.status_code == 201, created.text
        record: dict[str, Any] = created.json()
        if worker_id is None:
            return record
        patched = self.api.client.patch(
            f"/v1/backups/{record['id']}",
            json={"worker_id": worker_id, "retention": RETENTION},
            headers=self.headers,
        )
        assert patched.status_code == 200, patched.text
        result: dict[str, Any] = patched.json()
        return result

    def audit(self, action: str) -> list[dict[str, Any]]:
        """The workspace's audit events of ``action``."""
        response = self.api.client.get(
            f"/v1/workspaces/{self.workspace_id}/audit",
            params={"action": action},
            headers=self.headers,
        )
        assert response.status_code == 200, response.text
        events: list[dict[str, Any]] = response.json()["data"]
        return events


@pytest.fixture
def ada(api: Api) -> Admin:
    """Ada administers Acme."""
    return Admin(api, "ada@example.com")


@pytest.fixture
def bob(api: Api) -> Admin:
    """Bob administers Globex."""
    return Admin(api, "bob@example.com", "Globex")


class TestApiKeyCreation:
    """``POST /v1/api-keys``."""

    def test_the_token_is_shown_once_and_reads_never_show_it(self, api: Api, ada: Admin) -> None:
        """201 with a checksummed ``bkk_`` token; GET and list return the same key without it."""
        created = ada.key(["backups:write", "backups:read"], name="  deploy bot ")
        assert set(created) == {
            "id",
            "name",
            "permissions",
            "token",
            "created_at",
            "expires_at",
            "last_used_at",
        }
        assert created["name"] == "deploy bot"
        assert created["permissions"] == ["backups:read", "backups:write"]
        assert token_kind(created["token"]) is TokenKind.API_KEY
        assert created["expires_at"] is None
        assert created["last_used_at"] is None
        read = api.client.get(f"/v1/api-keys/{created['id']}", headers=ada.headers)
        assert read.status_code == 200
        without_token = {k: v for k, v in created.items() if k != "token"}
        assert read.json() == without_token
        listed = api.client.get("/v1/api-keys", headers=ada.headers).json()
        assert listed == {"data": [without_token], "next_cursor": None}
        assert created["token"] not in read.text + str(listed)

    def test_the_key_authenticates_with_exactly_its_permissions(self, api: Api, ada: Admin) -> None:
        """``/v1/me`` shows an ``api_key`` principal in its workspace with its permissions."""
        created = ada.key(["backups:read"])
        me = api.client.get("/v1/me", headers=bearer(created["token"])).json()
        assert me == {
            "principal": {"type": "api_key", "id": created["id"]},
            "workspace_id": str(ada.workspace_id),
            "permissions": ["backups:read"],
        }
        listed = api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/backups", headers=bearer(created["token"])
        )
        assert listed.status_code == 200
        refused = api.client.post(
            f"/v1/workspaces/{ada.workspace_id}/backups",
            json={"name": "x", "kind": "manual"},
            headers=bearer(created["token"]),
        )
        assert_error(refused, 403, "forbidden", "missing permission backups:write")

    @pytest.mark.parametrize(
        ("body", "status", "code"),
        [
            ({"name": "", "permissions": []}, 400, "invalid_request"),
            ({"name": "x" * 101, "permissions": []}, 400, "invalid_request"),
            ({"name": "ok", "permissions": "backups:read"}, 400, "invalid_request"),
            ({"name": "ok", "permissions": [1]}, 400, "invalid_request"),
            ({"name": "ok"}, 400, "invalid_request"),
            ({"name": "ok", "permissions": [], "colour": "red"}, 400, "invalid_request"),
            ({"name": "ok", "permissions": [], "expires_at": "tomorrow"}, 400, "invalid_request"),
            ({"name": "ok", "permissions": ["backups:fly"]}, 422, "validation_failed"),
            (
                {"name": "ok", "permissions": [], "expires_at": "2001-01-01T00:00:00Z"},
                422,
                "validation_failed",
            ),
        ],
    )
    def test_bad_bodies(
        self, api: Api, ada: Admin, body: dict[str, Any], status: int, code: str
    ) -> None:
        """Malformed bodies are 400; unknown permissions and past expiry are 422."""
        response = api.client.post("/v1/api-keys", json=body, headers=ada.headers)
        assert_error(response, status, code)

    def test_an_idempotent_replay_returns_the_same_key(self, api: Api, ada: Admin) -> None:
        """Same ``Idempotency-Key`` and body: the first response, one key."""
        headers = {**ada.headers, "Idempotency-Key": "k-1"}
        body = {"name": "ci", "permissions": ["backups:read"]}
        first = api.client.post("/v1/api-keys", json=body, headers=headers)
        second = api.client.post("/v1/api-keys", json=body, headers=headers)
        assert first.status_code == second.status_code == 201
        assert first.json() == second.json()
        assert first.text == second.text
        assert len(api.client.get("/v1/api-keys", headers=ada.headers).json()["data"]) == 1
        # The stored response keeps the token sealed, never in clear.
        store = api.facade.deps.uow.args[0]  # type: ignore[attr-defined]
        stored = [r.body for r in store.tables["idempotency"].values() if r.body]
        assert len(stored) == 1
        assert first.json()["token"] not in stored[0]
        assert "sealed_token" in stored[0]

    def test_a_worker_replay_returns_the_same_token(self, api: Api, ada: Admin) -> None:
        """``POST /v1/workers`` with an ``Idempotency-Key``: one worker, same token."""
        headers = {**ada.headers, "Idempotency-Key": "w-1"}
        first = api.client.post("/v1/workers", json={"name": "w"}, headers=headers)
        second = api.client.post("/v1/workers", json={"name": "w"}, headers=headers)
        assert first.status_code == second.status_code == 201
        assert first.text == second.text
        assert api.client.get("/v1/me", headers=bearer(second.json()["token"])).status_code == 200


class TestApiKeyLifecycle:
    """Reading, revoking and expiry of API keys."""

    def test_revocation_takes_effect_on_the_next_request(self, api: Api, ada: Admin) -> None:
        """DELETE 204; then the token is 401 and the key 404; audited."""
        created = ada.key(["backups:read"])
        assert api.client.get("/v1/me", headers=bearer(created["token"])).status_code == 200
        deleted = api.client.delete(f"/v1/api-keys/{created['id']}", headers=ada.headers)
        assert deleted.status_code == 204
        assert_error(
            api.client.get("/v1/me", headers=bearer(created["token"])), 401, "unauthenticated"
        )
        gone = api.client.get(f"/v1/api-keys/{created['id']}", headers=ada.headers)
        assert_error(gone, 404, "not_found")
        again = api.client.delete(f"/v1/api-keys/{created['id']}", headers=ada.headers)
        assert_error(again, 404, "not_found")

    def test_another_workspaces_key_is_not_found(self, api: Api, ada: Admin, bob: Admin) -> None:
        """Bob's key id in Ada's workspace: 404 for read and delete, and nothing audited."""
        theirs = bob.key([])
        for response in (
            api.client.get(f"/v1/api-keys/{theirs['id']}", headers=ada.headers),
            api.client.delete(f"/v1/api-keys/{theirs['id']}", headers=ada.headers),
            api.client.get(f"/v1/api-keys/{uuid4()}", headers=ada.headers),
        ):
            assert_error(response, 404, "not_found")
        assert api.client.get("/v1/me", headers=bearer(theirs["token"])).status_code == 200
        assert_error(
            api.client.get("/v1/api-keys/not-a-uuid", headers=ada.headers), 400, "invalid_request"
        )

    def test_an_unscoped_session_must_select_a_workspace(self, api: Api) -> None:
        """403 ``select a workspace first``."""
        token = api.person("una@example.com")
        for response in (
            api.client.get("/v1/api-keys", headers=bearer(token)),
            api.client.get("/v1/workers", headers=bearer(token)),
            api.client.post("/v1/workers", json={"name": "w"}, headers=bearer(token)),
        ):
            assert_error(response, 403, "forbidden", "select a workspace first")


class TestMachinesActOnlyInTheirWorkspace:
    """The answers to a machine outside its reach (which use cases refuse machines, and
    where: ``tests/usecases/test_machine_rules.py``)."""

    def test_person_only_routes_are_403_and_another_workspace_404(
        self, api: Api, ada: Admin
    ) -> None:
        """Listing workspaces with a key: 403 ``forbidden``; another workspace of its
        creator: 404 ``not_found``; a key of a deleted workspace: 401."""
        created = ada.key(["workspaces:read"])
        key = bearer(created["token"])
        assert_error(api.client.get("/v1/workspaces", headers=key), 403, "forbidden")
        second = api.client.post("/v1/workspaces", json={"name": "Second"}, headers=ada.headers)
        path = f"/v1/workspaces/{second.json()['id']}"
        assert_error(api.client.get(path, headers=key), 404, "not_found")
        deleted = api.client.delete(f"/v1/workspaces/{ada.workspace_id}", headers=ada.headers)
        assert deleted.status_code == 204
        assert_error(api.client.get("/v1/me", headers=key), 401, "unauthenticated")


class TestWorkers:
    """``/v1/workers``: create, list, read, rotate, delete."""

    def test_a_worker_holds_exactly_the_worker_permissions(self, api: Api, ada: Admin) -> None:
        """201 with a ``bkw_`` token; ``/v1/me`` shows a worker with four permissions."""
        created = ada.worker("  rack-1 ")
        assert set(created) == {"id", "name", "token", "created_at", "last_seen_at"}
        assert created["name"] == "rack-1"
        assert token_kind(created["token"]) is TokenKind.WORKER
        me = api.client.get("/v1/me", headers=bearer(created["token"])).json()
        assert me["principal"] == {"type": "worker", "id": created["id"]}
        assert set(me["permissions"]) == {p.value for p in WORKER_PERMISSIONS}
        read = api.client.get(f"/v1/workers/{created['id']}", headers=ada.headers).json()
        assert read["last_seen_at"] is not None
        assert "token" not in read
        listed = api.client.get("/v1/workers", headers=ada.headers).json()
        assert [w["id"] for w in listed["data"]] == [created["id"]]

    def test_rotate_answers_200_and_delete_204(self, api: Api, ada: Admin) -> None:
        """Rotate: 200 with the worker and its new token; the old one is 401 on the next
        request; delete: 204 with no body, then 404 (the rules of both:
        ``tests/usecases/test_machine_rules.py::TestWorkers``)."""
        created = ada.worker()
        rotated = api.client.post(f"/v1/workers/{created['id']}/rotate", headers=ada.headers)
        assert rotated.status_code == 200, rotated.text
        assert set(rotated.json()) == {"id", "name", "token", "created_at", "last_seen_at"}
        assert rotated.json()["id"] == created["id"]
        assert token_kind(rotated.json()["token"]) is TokenKind.WORKER
        assert_error(
            api.client.get("/v1/me", headers=bearer(created["token"])), 401, "unauthenticated"
        )
        deleted = api.client.delete(f"/v1/workers/{created['id']}", headers=ada.headers)
        assert (deleted.status_code, deleted.content) == (204, b"")
        gone = api.client.get(f"/v1/workers/{created['id']}", headers=ada.headers)
        assert_error(gone, 404, "not_found")

    @pytest.mark.parametrize("name", ["", "   ", "x" * 101, "tab\there"])
    def test_bad_names_are_invalid_requests(self, api: Api, ada: Admin, name: str) -> None:
        """Names are 1 to 100 characters after trimming, no control characters."""
        response = api.client.post("/v1/workers", json={"name": name}, headers=ada.headers)
        assert_error(response, 400, "invalid_request")

    def test_another_workspaces_worker_is_not_found(self, api: Api, ada: Admin, bob: Admin) -> None:
        """Bob's worker in Ada's workspace: 404 everywhere, and it cannot be assigned (422)."""
        theirs = bob.worker()
        for response in (
            api.client.get(f"/v1/workers/{theirs['id']}", headers=ada.headers),
            api.client.delete(f"/v1/workers/{theirs['id']}", headers=ada.headers),
            api.client.post(f"/v1/workers/{theirs['id']}/rotate", headers=ada.headers),
        ):
            assert_error(response, 404, "not_found")
        backup = ada.local_backup("files")
        refused = api.client.patch(
            f"/v1/backups/{backup['id']}", json={"worker_id": theirs["id"]}, headers=ada.headers
        )
        assert_error(refused, 422, "validation_failed")


class TestStoredReplays:
    """Idempotent replays of every token-issuing creation store the token sealed."""

    def test_session_replays_keep_the_token_sealed(self, api: Api) -> None:
        """Sign-in: the replay answers the same token; neither it nor a switch's token is
        stored in clear."""

        def headers() -> dict[str, str]:  # a provider token is single-use (contract 13)
            return {
                **bearer(idp_access_token(api.facade, "sam@example.com")),
                "Idempotency-Key": "s-1",
            }

        first = api.client.post("/v1/auth/sessions", headers=headers())
        second = api.client.post("/v1/auth/sessions", headers=headers())
        assert first.status_code == second.status_code == 201
        assert first.text == second.text
        session = first.json()["token"]
        created = api.client.post("/v1/workspaces", json={"name": "S"}, headers=bearer(session))
        body = {"workspace_id": created.json()["id"]}
        switch_headers = {**bearer(session), "Idempotency-Key": "s-2"}
        switched = api.client.post("/v1/auth/switch", json=body, headers=switch_headers)
        assert switched.status_code == 201
        store = api.facade.deps.uow.args[0]  # type: ignore[attr-defined]
        stored = " ".join(r.body for r in store.tables["idempotency"].values() if r.body)
        assert session not in stored
        assert switched.json()["token"] not in stored
