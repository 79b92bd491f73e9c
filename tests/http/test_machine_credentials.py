"""HTTP tests of API keys and workers (api-spec 4-5, contract 2, 3 and 10).

Creation with the token shown once, reads without it, revocation and rotation effective on
the next request, permissions that never exceed the creator's, machine credentials acting
only in their workspace, workers seeing only the backups assigned to them, quotas, audit.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.billing import BillingState
from strongroom.domain.permissions import WORKER_PERMISSIONS, Permission
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.tokens import TokenKind, token_kind
from strongroom.domain.workspaces import Membership
from support.checks import assert_error
from support.world import Api, bearer, idp_access_token, make_client, make_facade

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


def member_in(api: Api, admin: Admin, email: str, role: str) -> str:
    """A session of ``email`` scoped to the admin's workspace with ``role``."""
    token = api.person(email)
    user_id = UUID(api.client.get("/v1/me", headers=bearer(token)).json()["principal"]["id"])
    with api.facade.deps.uow() as uow:
        uow.memberships.add(
            Membership(admin.workspace_id, user_id, role, api.facade.deps.clock.now())
        )
        uow.commit()
    return api.switch(token, admin.workspace_id)


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

    def test_permissions_beyond_the_creators_are_refused_and_audited(
        self, api: Api, ada: Admin
    ) -> None:
        """A key holding ``api_keys:write`` cannot mint a key with more than it holds."""
        minter = ada.key(["api_keys:write", "backups:read"])
        refused = api.client.post(
            "/v1/api-keys",
            json={"name": "wider", "permissions": ["backups:read", "artifacts:delete"]},
            headers=bearer(minter["token"]),
        )
        assert_error(refused, 403, "forbidden", "missing permission artifacts:delete")
        narrower = api.client.post(
            "/v1/api-keys",
            json={"name": "narrower", "permissions": ["backups:read"]},
            headers=bearer(minter["token"]),
        )
        assert narrower.status_code == 201, narrower.text
        denied = [e for e in ada.audit("api_key.create") if e["outcome"] == "denied"]
        assert len(denied) == 1
        assert denied[0]["actor"] == {"type": "api_key", "id": minter["id"]}

    def test_a_member_cannot_mint_keys(self, api: Api, ada: Admin) -> None:
        """``member`` lacks ``api_keys:write``: 403, audited as denied."""
        token = member_in(api, ada, "mia@example.com", "member")
        refused = api.client.post(
            "/v1/api-keys", json={"name": "x", "permissions": []}, headers=bearer(token)
        )
        assert_error(refused, 403, "forbidden", "missing permission api_keys:write")
        assert [e["outcome"] for e in ada.audit("api_key.create")] == ["denied"]

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

    def test_quota_and_usage(self, api: Api, ada: Admin) -> None:
        """``api_keys_per_workspace``: 409 at the limit; the quotas endpoint counts keys."""
        api.facade.workspaces.set_quota(ada.workspace_id, QuotaResource.API_KEYS_PER_WORKSPACE, 2)
        ada.key([])
        ada.key([])
        refused = api.client.post(
            "/v1/api-keys", json={"name": "third", "permissions": []}, headers=ada.headers
        )
        assert_error(refused, 409, "quota_exceeded", "api_keys_per_workspace", "2")
        quotas = api.client.get(f"/v1/workspaces/{ada.workspace_id}/quotas", headers=ada.headers)
        usage = {q["resource"]: q["usage"] for q in quotas.json()["data"]}
        assert usage["api_keys_per_workspace"] == 2

    def test_a_blocked_workspace_refuses_new_keys(self, api: Api, ada: Admin) -> None:
        """Billing state ``blocked`` refuses the write with 409 ``billing_restricted``."""
        api.facade.workspaces.set_billing_state(ada.workspace_id, BillingState.BLOCKED)
        refused = api.client.post(
            "/v1/api-keys", json={"name": "x", "permissions": []}, headers=ada.headers
        )
        assert_error(refused, 409, "billing_restricted", "blocked")

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

    def test_the_audit_event_holds_no_secret(self, api: Api, ada: Admin, caplog: Any) -> None:
        """``api_key.create`` records name and permissions, never the token."""
        caplog.set_level(logging.DEBUG)
        created = ada.key(["backups:read"])
        (event,) = ada.audit("api_key.create")
        assert event["target"] == {"type": "api_key", "id": created["id"]}
        assert event["changes"]["permissions"] == {"from": None, "to": ["backups:read"]}
        assert created["token"] not in str(event)
        assert created["token"] not in caplog.text


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
        assert [e["outcome"] for e in ada.audit("api_key.delete")] == ["success"]

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

    def test_an_expired_key_is_unauthenticated(self) -> None:
        """After ``expires_at`` the key answers 401."""
        clock = ManualClock(datetime.now(UTC))
        facade = make_facade(clock=clock)
        with make_client(facade) as client:
            ada = Admin(Api(facade, client), "ada@example.com")
            expires = (clock.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
            created = ada.key(["backups:read"], expires_at=expires)
            assert created["expires_at"] is not None
            assert client.get("/v1/me", headers=bearer(created["token"])).status_code == 200
            clock.advance(timedelta(hours=1))
            assert_error(
                client.get("/v1/me", headers=bearer(created["token"])), 401, "unauthenticated"
            )

    def test_last_use_is_recorded_at_most_once_a_minute(self) -> None:
        """``last_used_at`` moves on the first use, not again within a minute, then again."""
        clock = ManualClock(datetime.now(UTC))
        facade = make_facade(clock=clock)
        with make_client(facade) as client:
            ada = Admin(Api(facade, client), "ada@example.com")
            created = ada.key(["backups:read"])

            def last_used() -> str | None:
                found = client.get(f"/v1/api-keys/{created['id']}", headers=ada.headers)
                value: str | None = found.json()["last_used_at"]
                return value

            client.get("/v1/me", headers=bearer(created["token"]))
            first = last_used()
            assert first is not None
            clock.advance(timedelta(seconds=30))
            client.get("/v1/me", headers=bearer(created["token"]))
            assert last_used() == first
            clock.advance(timedelta(seconds=31))
            client.get("/v1/me", headers=bearer(created["token"]))
            later = last_used()
            assert later is not None
            assert later > first

    def test_tokens_that_only_look_right_are_refused(self, api: Api, ada: Admin) -> None:
        """A bad checksum or an unknown key: 401."""
        token = ada.key([])["token"]
        flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
        assert_error(api.client.get("/v1/me", headers=bearer(flipped)), 401, "unauthenticated")
        forged = token[:10] + ("a" if token[10] != "a" else "b") + token[11:]
        assert_error(api.client.get("/v1/me", headers=bearer(forged)), 401, "unauthenticated")


class TestMachinesActOnlyInTheirWorkspace:
    """Machine credentials: any other ``{wid}`` is 404; person-only routes are 403."""

    def test_another_workspace_is_not_found_even_one_of_the_creators(
        self, api: Api, ada: Admin
    ) -> None:
        """Ada belongs to a second workspace; her key still sees 404 there, never
        ``wrong_workspace``."""
        created = ada.key(["workspaces:read", "backups:read"])
        second = api.client.post("/v1/workspaces", json={"name": "Second"}, headers=ada.headers)
        second_id = second.json()["id"]
        key = bearer(created["token"])
        assert api.client.get(f"/v1/workspaces/{ada.workspace_id}", headers=key).status_code == 200
        for path in (f"/v1/workspaces/{second_id}", f"/v1/workspaces/{second_id}/backups"):
            assert_error(api.client.get(path, headers=key), 404, "not_found")

    def test_person_only_routes_refuse_machines(self, api: Api, ada: Admin) -> None:
        """Listing or creating workspaces, switching, signing out: 403 ``forbidden``."""
        every = [p.value for p in Permission]
        for token in (ada.key(every)["token"], ada.worker()["token"]):
            for response in (
                api.client.get("/v1/workspaces", headers=bearer(token)),
                api.client.post("/v1/workspaces", json={"name": "X"}, headers=bearer(token)),
                api.client.post(
                    "/v1/auth/switch",
                    json={"workspace_id": str(ada.workspace_id)},
                    headers=bearer(token),
                ),
                api.client.delete("/v1/auth/sessions/current", headers=bearer(token)),
            ):
                assert_error(response, 403, "forbidden")

    def test_deleting_the_workspace_ends_its_machine_credentials(
        self, api: Api, ada: Admin
    ) -> None:
        """Keys and workers of a deleted workspace answer 401."""
        key, worker = ada.key([])["token"], ada.worker()["token"]
        assert (
            api.client.delete(f"/v1/workspaces/{ada.workspace_id}", headers=ada.headers).status_code
            == 204
        )
        for token in (key, worker):
            assert_error(api.client.get("/v1/me", headers=bearer(token)), 401, "unauthenticated")


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

    def test_rotation_kills_the_old_token_at_once(self, api: Api, ada: Admin) -> None:
        """200 with a new token; the old one is 401 on the next request; audited."""
        created = ada.worker()
        rotated = api.client.post(f"/v1/workers/{created['id']}/rotate", headers=ada.headers)
        assert rotated.status_code == 200, rotated.text
        assert rotated.json()["id"] == created["id"]
        new_token = rotated.json()["token"]
        assert new_token != created["token"]
        assert_error(
            api.client.get("/v1/me", headers=bearer(created["token"])), 401, "unauthenticated"
        )
        assert api.client.get("/v1/me", headers=bearer(new_token)).status_code == 200
        (event,) = ada.audit("worker.rotate")
        assert new_token not in str(event)
        assert created["token"] not in str(event)

    def test_deletion_ends_the_worker(self, api: Api, ada: Admin) -> None:
        """204; then 401 for its token and 404 for its id."""
        created = ada.worker()
        assert (
            api.client.delete(f"/v1/workers/{created['id']}", headers=ada.headers).status_code
            == 204
        )
        assert_error(
            api.client.get("/v1/me", headers=bearer(created["token"])), 401, "unauthenticated"
        )
        assert_error(
            api.client.get(f"/v1/workers/{created['id']}", headers=ada.headers), 404, "not_found"
        )
        assert_error(
            api.client.post(f"/v1/workers/{created['id']}/rotate", headers=ada.headers),
            404,
            "not_found",
        )

    def test_a_worker_with_backups_cannot_be_deleted(self, api: Api, ada: Admin) -> None:
        """409 ``invalid_state`` while a backup is assigned to it."""
        created = ada.worker()
        ada.local_backup("files", created["id"])
        refused = api.client.delete(f"/v1/workers/{created['id']}", headers=ada.headers)
        assert_error(refused, 409, "invalid_state")

    @pytest.mark.parametrize("name", ["", "   ", "x" * 101, "tab\there"])
    def test_bad_names_are_invalid_requests(self, api: Api, ada: Admin, name: str) -> None:
        """Names are 1 to 100 characters after trimming, no control characters."""
        response = api.client.post("/v1/workers", json={"name": name}, headers=ada.headers)
        assert_error(response, 400, "invalid_request")

    def test_quota_and_usage(self, api: Api, ada: Admin) -> None:
        """``workers_per_workspace``: 409 at the limit; the quotas endpoint counts workers."""
        api.facade.workspaces.set_quota(ada.workspace_id, QuotaResource.WORKERS_PER_WORKSPACE, 1)
        ada.worker()
        refused = api.client.post("/v1/workers", json={"name": "w2"}, headers=ada.headers)
        assert_error(refused, 409, "quota_exceeded", "workers_per_workspace", "1")
        quotas = api.client.get(f"/v1/workspaces/{ada.workspace_id}/quotas", headers=ada.headers)
        usage = {q["resource"]: q["usage"] for q in quotas.json()["data"]}
        assert usage["workers_per_workspace"] == 1

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

    def test_a_viewer_reads_but_cannot_write_workers(self, api: Api, ada: Admin) -> None:
        """``viewer`` holds ``workers:read`` only: writes are 403 and audited as denied."""
        created = ada.worker()
        token = member_in(api, ada, "vic@example.com", "viewer")
        assert api.client.get("/v1/workers", headers=bearer(token)).status_code == 200
        for response, slug in (
            (
                api.client.post("/v1/workers", json={"name": "w"}, headers=bearer(token)),
                "workers:write",
            ),
            (
                api.client.post(f"/v1/workers/{created['id']}/rotate", headers=bearer(token)),
                "workers:write",
            ),
            (
                api.client.delete(f"/v1/workers/{created['id']}", headers=bearer(token)),
                "workers:write",
            ),
        ):
            assert_error(response, 403, "forbidden", f"missing permission {slug}")
        outcomes = {
            action: [e["outcome"] for e in ada.audit(action)]
            for action in ("worker.create", "worker.rotate", "worker.delete")
        }
        assert outcomes == {
            "worker.create": ["denied", "success"],
            "worker.rotate": ["denied"],
            "worker.delete": ["denied"],
        }


class TestWorkerScope:
    """A worker credential reads only the backups assigned to it and never writes them."""

    def test_a_worker_sees_only_its_own_backups(self, api: Api, ada: Admin) -> None:
        """Its backup is 200; another backup of the workspace is 404; the list holds its own."""
        mine, other = ada.worker("mine"), ada.worker("other")
        assigned = ada.local_backup("assigned", mine["id"])
        assert assigned["state"] == "active"
        elsewhere = ada.local_backup("elsewhere", other["id"])
        unassigned = ada.local_backup("unassigned")
        worker = bearer(mine["token"])
        assert api.client.get(f"/v1/backups/{assigned['id']}", headers=worker).status_code == 200
        for backup in (elsewhere, unassigned):
            assert_error(
                api.client.get(f"/v1/backups/{backup['id']}", headers=worker), 404, "not_found"
            )
        listed = api.client.get(f"/v1/workspaces/{ada.workspace_id}/backups", headers=worker)
        assert [b["id"] for b in listed.json()["data"]] == [assigned["id"]]

    def test_a_stolen_worker_credential_cannot_change_or_delete_backups(
        self, api: Api, ada: Admin
    ) -> None:
        """PATCH, pause, delete, and every management route: 403 naming the permission."""
        mine = ada.worker()
        assigned = ada.local_backup("assigned", mine["id"])
        worker = bearer(mine["token"])
        bid = assigned["id"]
        for response, slug in (
            (
                api.client.patch(f"/v1/backups/{bid}", json={"name": "x"}, headers=worker),
                "backups:write",
            ),
            (api.client.post(f"/v1/backups/{bid}/pause", headers=worker), "backups:write"),
            (api.client.delete(f"/v1/backups/{bid}", headers=worker), "backups:write"),
            (
                api.client.delete(f"/v1/workspaces/{ada.workspace_id}", headers=worker),
                "workspaces:write",
            ),
            (api.client.get("/v1/api-keys", headers=worker), "api_keys:read"),
            (api.client.post("/v1/workers", json={"name": "w"}, headers=worker), "workers:write"),
        ):
            assert_error(response, 403, "forbidden", f"missing permission {slug}")
        assert api.client.get(f"/v1/backups/{bid}", headers=worker).json()["name"] == "assigned"


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
