"""``GET /v1/workspaces/{wid}/quotas`` (contract section 4): its wire shape and order of
checks. Usage, the operator's limits and their audit: ``tests/usecases/test_quota_usage.py``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

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


class TestQuotas:
    """Every resource, its effective limit and its usage."""

    def test_defaults(self, api: Api) -> None:
        """A new workspace lists all five resources with their defaults, the creator as its
        one member, and ``next_cursor: null``."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        assert quotas(api, token, workspace_id) == {"data": DEFAULTS, "next_cursor": None}

    def test_quotas_need_workspaces_read(self, api: Api) -> None:
        """An unscoped session: 403 ``select a workspace first``."""
        _, workspace_id = api.workspace_admin("ada@example.com")
        response = api.client.get(
            f"/v1/workspaces/{workspace_id}/quotas", headers=bearer(api.person("ada@example.com"))
        )
        assert response.status_code == 403
        assert response.json()["error"]["message"] == "select a workspace first"
