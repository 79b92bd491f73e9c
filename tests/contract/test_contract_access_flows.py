"""The access use cases over HTTP on every adapter: API keys, workers, roles, members,
invitations, and exact quotas of machine credentials under concurrency."""

from __future__ import annotations

import threading
from typing import Any

from contract_records import Adapter  # type: ignore[import-not-found]

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.bootstrap import bootstrap
from support.world import FAST_HASHER, Api, bearer, make_client


def _api_on(adapter: Adapter) -> Any:
    clock, ids = SystemClock(), SecureIds()
    idp = BuiltinIdentityProvider(uow=adapter.async_uow, clock=clock, ids=ids, hasher=FAST_HASHER)
    return blocking(bootstrap(uow=adapter.async_uow, clock=clock, ids=ids, identity=idp))


def test_the_access_flows_work_on_every_adapter(adapter: Adapter) -> None:
    """Keys and workers authenticate, rotate and die; roles, invitations and members work."""
    facade = _api_on(adapter)
    with make_client(facade) as client:
        api = Api(facade, client)
        admin, workspace_id = api.workspace_admin("ada@example.com")
        headers = bearer(admin)
        base = f"/v1/workspaces/{workspace_id}"

        key = client.post(
            "/v1/api-keys", json={"name": "ci", "permissions": ["backups:read"]}, headers=headers
        ).json()
        assert client.get("/v1/me", headers=bearer(key["token"])).status_code == 200
        assert client.get(f"/v1/api-keys/{key['id']}", headers=headers).json()["last_used_at"]
        assert client.delete(f"/v1/api-keys/{key['id']}", headers=headers).status_code == 204
        assert client.get("/v1/me", headers=bearer(key["token"])).status_code == 401

        worker = client.post("/v1/workers", json={"name": "rack"}, headers=headers).json()
        rotated = client.post(f"/v1/workers/{worker['id']}/rotate", headers=headers).json()
        assert client.get("/v1/me", headers=bearer(worker["token"])).status_code == 401
        assert client.get("/v1/me", headers=bearer(rotated["token"])).status_code == 200

        made = client.post(
            f"{base}/roles",
            json={"slug": "ops-team", "name": "Ops", "permissions": ["backups:read"]},
            headers=headers,
        )
        assert made.status_code == 201, made.text
        assert (
            client.post(
                f"{base}/roles",
                json={"slug": "ops-team", "name": "x", "permissions": []},
                headers=headers,
            ).status_code
            == 409
        )
        client.post(
            f"{base}/roles", json={"slug": "opsa", "name": "A", "permissions": []}, headers=headers
        )
        slugs = [r["slug"] for r in client.get(f"{base}/roles", headers=headers).json()["data"]]
        assert slugs == ["admin", "member", "viewer", "ops-team", "opsa"]

        invitation = client.post(
            f"{base}/invitations",
            json={"email": "Bob@Example.com", "role": "ops-team"},
            headers=headers,
        ).json()
        bob = api.person("bob@example.com")
        accepted = client.post(f"/v1/invitations/{invitation['id']}/accept", headers=bearer(bob))
        assert accepted.status_code == 200, accepted.text
        again = client.post(f"/v1/invitations/{invitation['id']}/accept", headers=bearer(bob))
        assert again.status_code == 409
        members = client.get(f"{base}/members", headers=headers).json()["data"]
        assert [m["role"] for m in members] == ["ops-team", "admin"]
        bob_id = accepted.json()["user_id"]
        assert client.delete(f"{base}/roles/ops-team", headers=headers).status_code == 409
        patched = client.patch(f"{base}/members/{bob_id}", json={"role": "viewer"}, headers=headers)
        assert patched.status_code == 200, patched.text
        assert client.delete(f"{base}/roles/ops-team", headers=headers).status_code == 204
        ada_id = members[1]["user_id"]
        assert client.delete(f"{base}/members/{ada_id}", headers=headers).status_code == 409
        assert client.delete(f"{base}/members/{bob_id}", headers=headers).status_code == 204


def test_machine_credential_quotas_are_exact_under_concurrency(adapter: Adapter) -> None:
    """Twelve parallel creations against a limit of 5 make exactly 5 of each."""
    facade = _api_on(adapter)
    with make_client(facade) as client:
        api = Api(facade, client)
        admin, workspace_id = api.workspace_admin("ada@example.com")
        for resource in (QuotaResource.API_KEYS_PER_WORKSPACE, QuotaResource.WORKERS_PER_WORKSPACE):
            facade.workspaces.set_quota(workspace_id, resource, 5)
        caller = facade.access.authenticate(admin)
        start = threading.Barrier(12)
        outcomes: list[str] = []

        def create(kind: str) -> None:
            start.wait()
            try:
                if kind == "key":
                    facade.api_keys.create(caller, "k", [])
                else:
                    facade.workers.create(caller, "w")
                outcomes.append(kind)
            except Exception as error:
                outcomes.append(type(error).__name__)

        threads = [
            threading.Thread(target=create, args=("key" if i % 2 else "worker",)) for i in range(12)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert outcomes.count("key") == 5
        assert outcomes.count("worker") == 5
        assert outcomes.count("QuotaExceededError") == 2
