"""Workspaces over HTTP (contract sections 1, 4 and 10): the routes' wire shapes, status
codes and order of checks, a failing provider's 502, and parallel creations. The rules
(the per-person quota, billing gates, the trial start, what a delete ends):
``tests/usecases/test_workspace_rules.py`` and
``tests/usecases/test_workspaces_and_sessions.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Any
from uuid import UUID

import pytest

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import MemoryBilling, MemoryNamespaces
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.domain.billing import BillingState
from strongroom.domain.workspaces import Membership
from strongroom.ports.driving import Strongroom
from support.world import FAST_HASHER, Api, bearer, make_client, make_facade

RFC3339_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


def create(api: Api, token: str, name: str, **headers: str) -> Any:
    """``POST /v1/workspaces``."""
    return api.client.post(
        "/v1/workspaces", json={"name": name}, headers={**bearer(token), **headers}
    )


def listing(api: Api, token: str) -> list[dict[str, Any]]:
    """The caller's workspace list (one page of up to 200)."""
    response = api.client.get("/v1/workspaces", params={"limit": 200}, headers=bearer(token))
    assert response.status_code == 200
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def audit(api: Api, token: str, workspace_id: UUID | str, **params: str) -> list[dict[str, Any]]:
    """A workspace's audit events, newest first."""
    response = api.client.get(
        f"/v1/workspaces/{workspace_id}/audit", params=params, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["data"]
    return events


def join(api: Api, email: str, workspace_id: UUID, role: str) -> tuple[str, str]:
    """Make ``email`` a member with ``role``; their unscoped session and user id."""
    token = api.person(email)
    user_id = api.client.get("/v1/me", headers=bearer(token)).json()["user"]["id"]
    with api.facade.deps.uow() as uow:
        uow.memberships.add(Membership(workspace_id, UUID(user_id), role, datetime.now(UTC)))
        uow.commit()
    return token, user_id


class TestCreate:
    """``POST /v1/workspaces``."""

    def test_created_in_the_single_workspace_shape(self, api: Api) -> None:
        """201 ``{id, name, idp_org_id, created_at, updated_at}``, the name trimmed."""
        token = api.person("ada@example.com")
        response = create(api, token, "  Acme Corp \t")
        assert response.status_code == 201, response.text
        body = response.json()
        assert set(body) == {"id", "name", "idp_org_id", "created_at", "updated_at"}
        UUID(body["id"])
        assert body["name"] == "Acme Corp"
        assert isinstance(body["idp_org_id"], str)
        assert body["idp_org_id"]
        assert RFC3339_Z.fullmatch(body["created_at"])
        assert body["created_at"] == body["updated_at"]

    @pytest.mark.parametrize(
        "name",
        ["", "   ", "x" * 101, " " + "x" * 101, "bad\x00name", "tab\x07bell", "new\nline", "\x7f"],
    )
    def test_bad_names_are_400(self, api: Api, name: str) -> None:
        """Empty after trimming, over 100 characters, or holding control characters: 400."""
        token = api.person("ada@example.com")
        response = create(api, token, name)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        assert listing(api, token) == []

    @pytest.mark.parametrize("name", ["x" * 100, "  " + "y" * 100 + "  ", "Ünïcødé 工作区", "a"])
    def test_names_up_to_100_after_trimming(self, api: Api, name: str) -> None:
        """1 to 100 characters after trimming are accepted."""
        token = api.person("ada@example.com")
        response = create(api, token, name)
        assert response.status_code == 201
        assert response.json()["name"] == name.strip()


class TestRead:
    """``GET /v1/workspaces`` and ``GET /v1/workspaces/{wid}``."""

    def test_list_shows_each_membership_with_its_role(self, api: Api) -> None:
        """The list holds ``{id, name, idp_org_id, role}`` per membership, newest first."""
        _, first = api.workspace_admin("eve@example.com", "Eve's")
        token, _ = join(api, "ada@example.com", first, "viewer")
        own = create(api, token, "Ada's").json()
        items = listing(api, token)
        assert [(item["name"], item["role"]) for item in items] == [
            ("Ada's", "admin"),
            ("Eve's", "viewer"),
        ]
        assert all(set(item) == {"id", "name", "idp_org_id", "role"} for item in items)
        assert items[0]["id"] == own["id"]
        assert api.client.get("/v1/workspaces", headers=bearer(token)).json()["next_cursor"] is None

    def test_get_one(self, api: Api) -> None:
        """``GET /v1/workspaces/{wid}`` returns the single-workspace shape."""
        token, workspace_id = api.workspace_admin("ada@example.com", "Acme")
        response = api.client.get(f"/v1/workspaces/{workspace_id}", headers=bearer(token))
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"id", "name", "idp_org_id", "created_at", "updated_at"}
        assert body["id"] == str(workspace_id)
        assert body["name"] == "Acme"

    def test_list_needs_a_credential(self, api: Api) -> None:
        """Without a credential the list is 401."""
        assert api.client.get("/v1/workspaces").status_code == 401
        assert api.client.post("/v1/workspaces", json={"name": "x"}).status_code == 401


class TestRename:
    """``PATCH /v1/workspaces/{wid}``."""

    def test_rename_returns_the_workspace_and_is_audited(self, api: Api) -> None:
        """200 with the renamed workspace; audited ``workspace.update`` with
        ``changes: {name: {from, to}}``."""
        token, workspace_id = api.workspace_admin("ada@example.com", "Acme")
        response = api.client.patch(
            f"/v1/workspaces/{workspace_id}",
            json={"name": "  Acme Ltd  "},
            headers={**bearer(token), "X-Request-ID": "rename-1"},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["name"] == "Acme Ltd"
        assert body["updated_at"] >= body["created_at"]
        again = api.client.get(f"/v1/workspaces/{workspace_id}", headers=bearer(token)).json()
        assert again == body
        event = audit(api, token, workspace_id, action="workspace.update")[0]
        me = api.client.get("/v1/me", headers=bearer(token)).json()
        assert event["outcome"] == "success"
        assert event["actor"] == {"type": "user", "id": me["user"]["id"]}
        assert event["target"] == {"type": "workspace", "id": str(workspace_id)}
        assert event["changes"] == {"name": {"from": "Acme", "to": "Acme Ltd"}}
        assert event["request_id"] == "rename-1"


class TestDelete:
    """``DELETE /v1/workspaces/{wid}``."""

    def test_delete_is_204_and_its_scoped_sessions_are_401(self, api: Api) -> None:
        """204 with no body, even when blocked; a session scoped to it is then 401, and a
        switch into it 404 (what a delete ends and keeps:
        ``tests/usecases/test_workspace_rules.py::TestDelete``)."""
        admin, workspace_id = api.workspace_admin("ada@example.com")
        unscoped = api.person("ada@example.com")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        response = api.client.delete(f"/v1/workspaces/{workspace_id}", headers=bearer(admin))
        assert response.status_code == 204
        assert response.content == b""
        assert api.client.get("/v1/me", headers=bearer(admin)).status_code == 401
        switch = api.client.post(
            "/v1/auth/switch", json={"workspace_id": str(workspace_id)}, headers=bearer(unscoped)
        )
        assert switch.status_code == 404
        assert switch.json()["error"]["code"] == "not_found"

    def test_deleted_workspace_is_404_for_a_member_of_it(self, api: Api) -> None:
        """A person scoped elsewhere gets 404 (not ``wrong_workspace``) for a deleted one,
        the same as for one that never existed."""
        token, first = api.workspace_admin("ada@example.com", "First")
        second = UUID(create(api, token, "Second").json()["id"])
        path = f"/v1/workspaces/{second}"
        assert api.client.get(path, headers=bearer(token)).json()["error"]["code"] == (
            "wrong_workspace"
        )
        scoped_second = api.switch(api.person("ada@example.com"), second)
        assert api.client.delete(path, headers=bearer(scoped_second)).status_code == 204
        response = api.client.get(path, headers=bearer(token))
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        assert first != second


class FlakyBilling(MemoryBilling):
    """Billing that fails with a connection error while ``down``."""

    down = True

    async def create_customer(self, workspace_id: UUID, name: str) -> str:
        """Fail while down."""
        if self.down:
            raise ConnectionError("billing is unreachable")
        return await super().create_customer(workspace_id, name)


class FlakyNamespaces(MemoryNamespaces):
    """Storage that fails with a connection error while ``down``."""

    down = True

    async def provision_namespace(self, workspace_id: UUID) -> str:
        """Fail while down."""
        if self.down:
            raise ConnectionError("storage is unreachable")
        return await super().provision_namespace(workspace_id)


class FlakyIdentity(BuiltinIdentityProvider):
    """The built-in provider, keeping its organizations, failing to create one while
    ``down``."""

    down = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.organizations: set[str] = set()

    async def create_organization(self, name: str) -> str:
        """Fail while down."""
        if self.down:
            raise ConnectionError("identity provider is unreachable")
        org_id = await super().create_organization(name)
        self.organizations.add(org_id)
        return org_id

    async def delete_organization(self, org_id: str) -> None:
        """Forget the organization."""
        self.organizations.discard(org_id)


def flaky_facade(failing: str) -> tuple[Strongroom, Any]:
    """A facade whose ``failing`` port is down; the port is returned to bring it up."""
    uow = partial(MemoryUnitOfWork, MemoryStore())
    identity = FlakyIdentity(uow=uow, clock=SystemClock(), ids=SecureIds(), hasher=FAST_HASHER)
    identity.down = failing == "identity"
    billing = FlakyBilling()
    billing.down = failing == "billing"
    namespaces = FlakyNamespaces()
    namespaces.down = failing == "namespaces"
    facade = make_facade(uow=uow, identity=identity, billing=billing, namespaces=namespaces)
    port = {"identity": identity, "billing": billing, "namespaces": namespaces}[failing]
    return facade, port


@pytest.fixture(params=["identity", "billing", "namespaces"])
def flaky(request: pytest.FixtureRequest) -> Iterator[tuple[Api, Any]]:
    """An API whose identity provider, billing or storage is down."""
    facade, port = flaky_facade(request.param)
    with make_client(facade) as client:
        yield Api(facade, client), port


class TestProvisioning:
    """Organization, customer and namespace are provisioned all-or-nothing."""

    def test_failing_dependency_is_502_and_leaves_nothing(self, flaky: tuple[Api, Any]) -> None:
        """A failing identity provider, billing or storage: 502 ``upstream_unavailable``;
        no workspace, customer, namespace or organization remains, and no quota is used."""
        api, port = flaky
        billing = api.facade.deps.billing
        namespaces = api.facade.deps.namespaces
        identity = api.facade.deps.identity
        assert isinstance(billing, MemoryBilling)
        assert isinstance(namespaces, MemoryNamespaces)
        assert isinstance(identity, FlakyIdentity)
        token = api.person("ada@example.com")
        for _ in range(6):
            response = create(api, token, "Acme", **{"X-Request-ID": "prov-1"})
            assert response.status_code == 502, response.text
            error = response.json()["error"]
            assert error["code"] == "upstream_unavailable"
            assert error["request_id"] == "prov-1"
            assert "ConnectionError" in error["detail"]
        assert listing(api, token) == []
        assert billing.customers == {}
        assert namespaces.namespaces == set()
        assert identity.organizations == set()
        port.down = False
        assert all(create(api, token, f"W{n}").status_code == 201 for n in range(5))
        assert create(api, token, "W5").status_code == 409
        assert len(billing.customers) == len(namespaces.namespaces) == 5
        assert len(identity.organizations) == 5

    def test_upstream_detail_hidden_in_production(self) -> None:
        """In production the 502 carries no ``detail``."""
        facade, _ = flaky_facade("billing")
        with make_client(facade, environment="production") as client:
            api = Api(facade, client)
            response = create(api, api.person("ada@example.com"), "Acme")
        assert response.status_code == 502
        assert "detail" not in response.json()["error"]
        assert "unreachable" not in response.text


def test_parallel_creations_respect_the_quota_exactly(api: Api) -> None:
    """Twelve parallel creations by one person create exactly five workspaces, and the
    refused ones leave no customer record or namespace behind."""
    token = api.person("ada@example.com")
    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(lambda n: create(api, token, f"W{n}").status_code, range(12)))
    assert sorted(statuses) == [201] * 5 + [409] * 7
    billing = api.facade.deps.billing
    namespaces = api.facade.deps.namespaces
    assert isinstance(billing, MemoryBilling)
    assert isinstance(namespaces, MemoryNamespaces)
    assert len(listing(api, token)) == 5
    assert len(billing.customers) == len(namespaces.namespaces) == 5
