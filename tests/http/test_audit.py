"""``GET /v1/workspaces/{wid}/audit`` (contract section 7): the event's wire shape, request
ids, the filters' parsing and the order of checks. What the trail records and each filter
keeps: ``tests/usecases/test_audit_rules.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from support.world import Api, bearer

EVENT_KEYS = {
    "id",
    "occurred_at",
    "actor",
    "action",
    "target",
    "request_id",
    "outcome",
    "changes",
}


def events(api: Api, token: str, workspace_id: UUID, **params: str) -> list[dict[str, Any]]:
    """The audit list (one page of up to 200)."""
    response = api.client.get(
        f"/v1/workspaces/{workspace_id}/audit",
        params={"limit": "200", **params},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def user_id(api: Api, token: str) -> str:
    """The user id behind a session."""
    value: str = api.client.get("/v1/me", headers=bearer(token)).json()["user"]["id"]
    return value


class TestEvents:
    """What the trail records."""

    def test_event_shape_and_request_ids(self, api: Api) -> None:
        """Each event has the contract's fields; ``request_id`` is the ``X-Request-ID`` of
        the request that caused it (client-sent or generated)."""
        token = api.person("ada@example.com")
        created = api.client.post(
            "/v1/workspaces",
            json={"name": "Acme"},
            headers={**bearer(token), "X-Request-ID": "create-ws-1"},
        )
        workspace_id = UUID(created.json()["id"])
        switched = api.client.post(
            "/v1/auth/switch", json={"workspace_id": str(workspace_id)}, headers=bearer(token)
        )
        scoped = switched.json()["token"]
        renamed = api.client.patch(
            f"/v1/workspaces/{workspace_id}", json={"name": "Acme 2"}, headers=bearer(scoped)
        )
        trail = events(api, scoped, workspace_id)
        assert all(set(event) == EVENT_KEYS for event in trail)
        assert [e["action"] for e in trail] == [
            "workspace.update",
            "session.switch",
            "workspace.create",
        ]
        assert [e["request_id"] for e in trail] == [
            renamed.headers["x-request-id"],
            switched.headers["x-request-id"],
            "create-ws-1",
        ]
        create = trail[-1]
        assert create["actor"] == {"type": "user", "id": user_id(api, scoped)}
        assert create["target"] == {"type": "workspace", "id": str(workspace_id)}
        assert create["outcome"] == "success"
        assert create["changes"] == {"name": {"from": None, "to": "Acme"}}
        assert create["occurred_at"].endswith("Z")
        UUID(create["id"])


class TestFilters:
    """``?action=``, ``?actor_id=`` and ``?since=``."""

    def test_query_parameters_are_parsed_and_combined(self, api: Api) -> None:
        """``since`` as RFC 3339 with any zone, ``action`` and ``actor_id`` as query
        parameters, combined (what each filter keeps:
        ``tests/usecases/test_audit_rules.py::TestFilters``)."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        all_events = events(api, token, workspace_id)
        future = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        assert events(api, token, workspace_id, since=future) == []
        assert events(api, token, workspace_id, since="2000-01-01T02:00:00+02:00") == all_events
        created = events(
            api,
            token,
            workspace_id,
            since="2000-01-01T00:00:00Z",
            action="workspace.create",
            actor_id=user_id(api, token),
        )
        assert created == all_events[-1:]

    @pytest.mark.parametrize(
        "params",
        [
            {"actor_id": "not-a-uuid"},
            {"actor_id": "42"},
            {"since": "yesterday"},
            {"since": "2026-13-01T00:00:00Z"},
            {"since": "2026-01-01T00:00:00"},
            {"since": "2026-01-01"},
        ],
    )
    def test_bad_filters_are_400(self, api: Api, params: dict[str, str]) -> None:
        """A non-UUID ``actor_id`` or a ``since`` that is not an RFC 3339 timestamp with a
        zone: 400 ``invalid_request``."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        response = api.client.get(
            f"/v1/workspaces/{workspace_id}/audit", params=params, headers=bearer(token)
        )
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"

    def test_permission_before_filters(self, api: Api) -> None:
        """A caller without access gets its refusal before any filter is looked at."""
        _, workspace_id = api.workspace_admin("ada@example.com")
        unscoped = api.person("ada@example.com")
        response = api.client.get(
            f"/v1/workspaces/{workspace_id}/audit",
            params={"since": "nope", "limit": "0"},
            headers=bearer(unscoped),
        )
        assert response.status_code == 403
