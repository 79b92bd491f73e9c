"""``GET /v1/workspaces/{wid}/quotas`` and the operator's quota changes (contract section 4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from strongroom.domain.backups import BackupKind
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
from support.world import Api, bearer

DEFAULTS = [
    {"resource": "backups_per_workspace", "limit": 100, "usage": 0},
    {"resource": "workers_per_workspace", "limit": 10, "usage": 0},
    {"resource": "api_keys_per_workspace", "limit": 25, "usage": 0},
    {"resource": "members_per_workspace", "limit": 0, "usage": 1},
    {"resource": "storage_bytes", "limit": 0, "usage": 0},
]


def quotas(api: Api, token: str, workspace_id: UUID) -> dict[str, Any]:
    """The quotas response."""
    response = api.client.get(f"/v1/workspaces/{workspace_id}/quotas", headers=bearer(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def by_resource(body: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The quota entries keyed by resource."""
    return {item["resource"]: item for item in body["data"]}


class TestQuotas:
    """Every resource, its effective limit and its usage."""

    def test_defaults(self, api: Api) -> None:
        """A new workspace lists all five resources with their defaults, the creator as its
        one member, and ``next_cursor: null``."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        assert quotas(api, token, workspace_id) == {"data": DEFAULTS, "next_cursor": None}

    def test_usage_counts_backups_and_members(self, api: Api) -> None:
        """Backups and members are counted."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        caller = api.facade.access.authenticate(token)
        for number in range(3):
            api.facade.backups.create(caller, workspace_id, f"B{number}", BackupKind.MANUAL)
        bob = api.person("bob@example.com")
        bob_id = api.client.get("/v1/me", headers=bearer(bob)).json()["user"]["id"]
        with api.facade.deps.uow() as uow:
            uow.memberships.add(Membership(workspace_id, UUID(bob_id), "viewer", datetime.now(UTC)))
            uow.commit()
        entries = by_resource(quotas(api, token, workspace_id))
        assert entries["backups_per_workspace"]["usage"] == 3
        assert entries["members_per_workspace"]["usage"] == 2
        viewer = api.switch(bob, workspace_id)
        assert by_resource(quotas(api, viewer, workspace_id)) == entries

    def test_operator_limit_is_effective_and_audited_as_system(self, api: Api) -> None:
        """``set_quota`` changes the reported limit and is audited ``quota.update`` by
        ``{type: system, id: null}`` with the change of that resource."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        api.facade.workspaces.set_quota(workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 3)
        api.facade.workspaces.set_quota(workspace_id, QuotaResource.STORAGE_BYTES, 1024)
        entries = by_resource(quotas(api, token, workspace_id))
        assert entries["backups_per_workspace"]["limit"] == 3
        assert entries["storage_bytes"]["limit"] == 1024
        assert entries["workers_per_workspace"]["limit"] == 10
        events = api.client.get(
            f"/v1/workspaces/{workspace_id}/audit",
            params={"action": "quota.update"},
            headers=bearer(token),
        ).json()["data"]
        assert [e["changes"] for e in events] == [
            {"storage_bytes": {"from": 0, "to": 1024}},
            {"backups_per_workspace": {"from": 100, "to": 3}},
        ]
        for event in events:
            assert event["actor"] == {"type": "system", "id": None}
            assert event["outcome"] == "success"
            assert event["request_id"] is None
            assert event["target"]["id"] == str(workspace_id)

    def test_quotas_need_workspaces_read(self, api: Api) -> None:
        """An unscoped session: 403 ``select a workspace first``."""
        _, workspace_id = api.workspace_admin("ada@example.com")
        response = api.client.get(
            f"/v1/workspaces/{workspace_id}/quotas", headers=bearer(api.person("ada@example.com"))
        )
        assert response.status_code == 403
        assert response.json()["error"]["message"] == "select a workspace first"

    def test_negative_limit_is_refused(self, api: Api) -> None:
        """An operator cannot set a negative limit; the reported limit is unchanged."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        with pytest.raises(ValueError, match="limit"):
            api.facade.workspaces.set_quota(workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, -1)
        assert quotas(api, token, workspace_id) == {"data": DEFAULTS, "next_cursor": None}
