"""``GET /v1/workspaces/{wid}/audit``: events, filters and request ids (contract section 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from strongroom.domain.backups import BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.workspaces import Membership
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

    def test_newest_first(self, api: Api) -> None:
        """Events are listed newest first."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        for number in range(5):
            api.client.patch(
                f"/v1/workspaces/{workspace_id}", json={"name": f"N{number}"}, headers=bearer(token)
            )
        trail = events(api, token, workspace_id, action="workspace.update")
        assert [e["changes"]["name"]["to"] for e in trail] == ["N4", "N3", "N2", "N1", "N0"]
        times = [e["occurred_at"] for e in trail]
        assert times == sorted(times, reverse=True)

    def test_denied_attempts_are_recorded(self, api: Api) -> None:
        """A member's refused rename and delete are audited ``denied``, with no changes."""
        admin, workspace_id = api.workspace_admin("ada@example.com")
        bob = api.person("bob@example.com")
        bob_id = user_id(api, bob)
        with api.facade.deps.uow() as uow:
            uow.memberships.add(Membership(workspace_id, UUID(bob_id), "member", datetime.now(UTC)))
            uow.commit()
        bob = api.switch(bob, workspace_id)
        path = f"/v1/workspaces/{workspace_id}"
        api.client.patch(path, json={"name": "Mine"}, headers=bearer(bob))
        api.client.delete(path, headers=bearer(bob))
        denied = events(api, admin, workspace_id, actor_id=bob_id)
        assert [(e["action"], e["outcome"], e["changes"]) for e in denied] == [
            ("workspace.delete", "denied", None),
            ("workspace.update", "denied", None),
            ("session.switch", "success", None),
        ]

    def test_billing_changes_are_in_the_workspace_trail(self, api: Api) -> None:
        """Operator billing changes appear as ``billing.update`` by the system actor."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.WARNED)
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        trail = events(api, token, workspace_id, action="billing.update")
        assert [e["changes"] for e in trail] == [
            {"billing_state": {"from": "warned", "to": "blocked"}},
            {"billing_state": {"from": "trial", "to": "warned"}},
        ]
        assert {(e["actor"]["type"], e["actor"]["id"]) for e in trail} == {("system", None)}

    def test_trails_do_not_cross_workspaces(self, api: Api) -> None:
        """One workspace's events never appear in another's trail."""
        ada, first = api.workspace_admin("ada@example.com", "First")
        eve, second = api.workspace_admin("eve@example.com", "Second")
        api.client.patch(f"/v1/workspaces/{second}", json={"name": "S2"}, headers=bearer(eve))
        mine = events(api, ada, first)
        assert all(e["target"]["id"] != str(second) for e in mine)
        assert events(api, ada, first, action="workspace.update") == []


class TestFilters:
    """``?action=``, ``?actor_id=`` and ``?since=``."""

    def test_action_filter(self, api: Api) -> None:
        """Only events of that action; an action nobody performed gives an empty list."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        assert [e["action"] for e in events(api, token, workspace_id, action="session.switch")] == [
            "session.switch"
        ]
        assert events(api, token, workspace_id, action="backup.create") == []

    def test_actor_filter(self, api: Api) -> None:
        """Only events by that actor."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        api.facade.workspaces.set_billing_state(workspace_id, BillingState.ACTIVE)
        mine = events(api, token, workspace_id, actor_id=user_id(api, token))
        assert [e["action"] for e in mine] == ["session.switch", "workspace.create"]
        assert events(api, token, workspace_id, actor_id=str(uuid4())) == []

    def test_since_filter(self, api: Api) -> None:
        """Only events at or after ``since``; filters combine."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        all_events = events(api, token, workspace_id)
        oldest = all_events[-1]["occurred_at"]
        future = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        past = "2000-01-01T00:00:00Z"
        assert events(api, token, workspace_id, since=future) == []
        assert events(api, token, workspace_id, since=past) == all_events
        assert events(api, token, workspace_id, since="2000-01-01T02:00:00+02:00") == all_events
        assert events(api, token, workspace_id, since=oldest)[-1] == all_events[-1]
        assert (
            events(api, token, workspace_id, since=past, action="workspace.create")
            == all_events[-1:]
        )

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


class TestDeniedVisibility:
    """Refusals on objects the caller cannot see are audited nowhere (contract section 10)."""

    def test_only_refusals_on_visible_objects_are_recorded(self, api: Api) -> None:
        """A viewer is refused (403) on its own workspace's backup and on another
        workspace's; only the first attempt is audited, in its own workspace."""
        owner, first = api.workspace_admin("ada@example.com", "First")
        theirs = api.facade.backups.create(
            api.facade.access.authenticate(owner), first, "theirs", BackupKind.MANUAL
        )
        admin, second = api.workspace_admin("eve@example.com", "Second")
        mine = api.facade.backups.create(
            api.facade.access.authenticate(admin), second, "mine", BackupKind.MANUAL
        )
        vic = api.person("vic@example.com")
        vic_id = user_id(api, vic)
        with api.facade.deps.uow() as uow:
            uow.memberships.add(Membership(second, UUID(vic_id), "viewer", datetime.now(UTC)))
            uow.commit()
        viewer = api.switch(vic, second)
        for backup_id in (theirs.id, uuid4(), mine.id):
            path = f"/v1/backups/{backup_id}"
            patched = api.client.patch(path, json={"name": "x"}, headers=bearer(viewer))
            deleted = api.client.delete(path, headers=bearer(viewer))
            assert patched.status_code == deleted.status_code == 403
        denied = [e for e in events(api, admin, second) if e["outcome"] == "denied"]
        assert [(e["action"], e["target"]) for e in denied] == [
            ("backup.delete", {"type": "backup", "id": str(mine.id)}),
            ("backup.update", {"type": "backup", "id": str(mine.id)}),
        ]
        assert [e for e in events(api, owner, first) if e["outcome"] == "denied"] == []
