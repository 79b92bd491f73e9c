"""HTTP tests of members and roles (api-spec 4, contract 3, 4 and 10).

Listing members, changing roles, removing members, the last admin rule, custom roles with
slug rules, immutable built-in roles, roles in use, and refusals of every escalation.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import httpx2
import pytest

from strongroom.domain.billing import BillingState
from strongroom.domain.workspaces import Membership
from support.checks import assert_error
from support.world import Api, bearer


class Team:
    """Ada administers a workspace; people join it with roles through the store."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.token, self.workspace_id = api.workspace_admin("ada@example.com")
        self.headers = bearer(self.token)
        self.ada_id = self.user_id(self.token)

    def user_id(self, token: str) -> UUID:
        me = self.api.client.get("/v1/me", headers=bearer(token)).json()
        return UUID(me["principal"]["id"])

    def join(self, email: str, role: str) -> tuple[str, UUID]:
        """A session of ``email`` scoped to the workspace with ``role``, and their id."""
        token = self.api.person(email)
        user_id = self.user_id(token)
        with self.api.facade.deps.uow() as uow:
            uow.memberships.add(
                Membership(self.workspace_id, user_id, role, self.api.facade.deps.clock.now())
            )
            uow.commit()
        return self.api.switch(token, self.workspace_id), user_id

    @property
    def base(self) -> str:
        return f"/v1/workspaces/{self.workspace_id}"

    def patch_member(self, user_id: UUID, role: str, token: str | None = None) -> httpx2.Response:
        return self.api.client.patch(
            f"{self.base}/members/{user_id}",
            json={"role": role},
            headers=bearer(token or self.token),
        )

    def remove(self, user_id: UUID, token: str | None = None) -> httpx2.Response:
        return self.api.client.delete(
            f"{self.base}/members/{user_id}", headers=bearer(token or self.token)
        )

    def create_role(self, body: dict[str, Any], token: str | None = None) -> httpx2.Response:
        return self.api.client.post(
            f"{self.base}/roles", json=body, headers=bearer(token or self.token)
        )

    def audit(self, action: str) -> list[dict[str, Any]]:
        response = self.api.client.get(
            f"{self.base}/audit", params={"action": action}, headers=self.headers
        )
        events: list[dict[str, Any]] = response.json()["data"]
        return events


@pytest.fixture
def team(api: Api) -> Team:
    """Ada's workspace."""
    return Team(api)


class TestMembers:
    """``GET``, ``PATCH`` and ``DELETE`` of members."""

    def test_the_member_list_shows_people_and_roles(self, api: Api, team: Team) -> None:
        """Newest first, with email, name, role and joining time."""
        _, bob_id = team.join("bob@example.com", "viewer")
        listed = api.client.get(f"{team.base}/members", headers=team.headers)
        assert listed.status_code == 200
        body = listed.json()
        assert [(m["user_id"], m["email"], m["role"]) for m in body["data"]] == [
            (str(bob_id), "bob@example.com", "viewer"),
            (str(team.ada_id), "ada@example.com", "admin"),
        ]
        assert set(body["data"][0]) == {"user_id", "email", "name", "role", "joined_at"}
        assert body["next_cursor"] is None

    def test_a_role_change_takes_effect_on_the_next_request(self, api: Api, team: Team) -> None:
        """Bob, a viewer, becomes a member: 200, then his session can create backups."""
        bob, bob_id = team.join("bob@example.com", "viewer")
        changed = team.patch_member(bob_id, "member")
        assert changed.status_code == 200, changed.text
        assert changed.json()["role"] == "member"
        created = api.client.post(
            f"{team.base}/backups", json={"name": "n", "kind": "manual"}, headers=bearer(bob)
        )
        assert created.status_code == 201
        (event,) = team.audit("member.update")
        assert event["changes"] == {"role": {"from": "viewer", "to": "member"}}
        assert event["target"] == {"type": "member", "id": str(bob_id)}

    def test_the_last_admin_can_be_neither_demoted_nor_removed(self, api: Api, team: Team) -> None:
        """409 ``last_admin``; with a second admin both work."""
        assert_error(team.patch_member(team.ada_id, "member"), 409, "last_admin")
        assert_error(team.remove(team.ada_id), 409, "last_admin")
        bob, bob_id = team.join("bob@example.com", "admin")
        assert team.patch_member(team.ada_id, "member").status_code == 200
        # Bob is now the only admin: he cannot leave either.
        assert_error(team.remove(bob_id, token=bob), 409, "last_admin")
        assert team.patch_member(team.ada_id, "admin", token=bob).status_code == 200
        assert team.remove(bob_id, token=bob).status_code == 204

    def test_removal_ends_the_membership_and_its_sessions(self, api: Api, team: Team) -> None:
        """204; the removed person's scoped session is 401; a second removal is 404."""
        bob, bob_id = team.join("bob@example.com", "viewer")
        assert team.remove(bob_id).status_code == 204
        assert_error(api.client.get("/v1/me", headers=bearer(bob)), 401, "unauthenticated")
        assert_error(team.remove(bob_id), 404, "not_found")
        assert [e["outcome"] for e in team.audit("member.delete")] == ["success"]

    def test_unknown_and_malformed_roles(self, team: Team) -> None:
        """A malformed slug is 400, an unknown one 422, an unknown member 404."""
        _, bob_id = team.join("bob@example.com", "viewer")
        assert_error(team.patch_member(bob_id, "Not A Slug"), 400, "invalid_request")
        assert_error(team.patch_member(bob_id, "ghost"), 422, "validation_failed")
        assert_error(team.patch_member(uuid4(), "viewer"), 404, "not_found")
        assert_error(team.remove(uuid4()), 404, "not_found")

    def test_a_member_cannot_manage_members(self, team: Team) -> None:
        """``member`` lacks ``members:write``: 403, audited as denied."""
        mia, _ = team.join("mia@example.com", "member")
        _, bob_id = team.join("bob@example.com", "viewer")
        assert_error(
            team.patch_member(bob_id, "member", token=mia),
            403,
            "forbidden",
            "missing permission members:write",
        )
        assert [e["outcome"] for e in team.audit("member.update")] == ["denied"]

    def test_nobody_grants_or_touches_more_than_they_hold(self, api: Api, team: Team) -> None:
        """A people manager (members:write, no backups:write) cannot make anyone a member,
        nor demote or remove an admin; they can move viewers around."""
        role = team.create_role(
            {
                "slug": "people",
                "name": "People",
                "permissions": ["members:read", "members:write", "backups:read"],
            }
        )
        assert role.status_code == 201, role.text
        manager, _ = team.join("pam@example.com", "people")
        _, bob_id = team.join("bob@example.com", "viewer")
        refused = team.patch_member(bob_id, "member", token=manager)
        assert_error(refused, 403, "forbidden", "missing permission")
        assert_error(team.patch_member(team.ada_id, "viewer", token=manager), 403, "forbidden")
        assert_error(team.remove(team.ada_id, token=manager), 403, "forbidden")
        outcomes = [e["outcome"] for e in team.audit("member.update")]
        assert outcomes == ["denied", "denied"]
        assert [e["outcome"] for e in team.audit("member.delete")] == ["denied"]

    def test_wrong_workspace_and_unknown_workspace(self, api: Api, team: Team) -> None:
        """Another workspace of Ada's: 403 ``wrong_workspace``; one she is not in: 404."""
        other = api.client.post("/v1/workspaces", json={"name": "Two"}, headers=team.headers)
        other_id = other.json()["id"]
        for path in (f"/v1/workspaces/{other_id}/members", f"/v1/workspaces/{other_id}/roles"):
            assert_error(api.client.get(path, headers=team.headers), 403, "wrong_workspace")
        for path in (f"/v1/workspaces/{uuid4()}/members", f"/v1/workspaces/{uuid4()}/roles"):
            assert_error(api.client.get(path, headers=team.headers), 404, "not_found")


class TestRoles:
    """Custom roles: CRUD, slug rules, built-in immutability, roles in use."""

    def test_the_list_has_built_in_roles_then_custom_roles(self, api: Api, team: Team) -> None:
        """One page; built-ins flagged."""
        created = team.create_role(
            {"slug": "ops", "name": "Operations", "permissions": ["backups:trigger"]}
        )
        assert created.status_code == 201, created.text
        assert created.json() == {
            "slug": "ops",
            "name": "Operations",
            "permissions": ["backups:trigger"],
            "builtin": False,
        }
        listed = api.client.get(f"{team.base}/roles", headers=team.headers).json()
        assert [(r["slug"], r["builtin"]) for r in listed["data"]] == [
            ("admin", True),
            ("member", True),
            ("viewer", True),
            ("ops", False),
        ]
        assert listed["next_cursor"] is None
        one = api.client.get(f"{team.base}/roles/ops", headers=team.headers)
        assert one.json() == created.json()
        assert api.client.get(f"{team.base}/roles/admin", headers=team.headers).status_code == 200

    @pytest.mark.parametrize("slug", ["A", "a", "1ops", "ops_team", "x" * 41, "Ops"])
    def test_bad_slugs_are_invalid_requests(self, team: Team, slug: str) -> None:
        """Slugs match ``^[a-z][a-z0-9-]{1,39}$``."""
        response = team.create_role({"slug": slug, "name": "n", "permissions": []})
        assert_error(response, 400, "invalid_request")

    def test_duplicate_and_built_in_slugs_are_taken(self, team: Team) -> None:
        """409 ``name_taken``."""
        assert team.create_role({"slug": "ops", "name": "n", "permissions": []}).status_code == 201
        for slug in ("ops", "admin"):
            response = team.create_role({"slug": slug, "name": "n", "permissions": []})
            assert_error(response, 409, "name_taken")

    def test_built_in_roles_are_immutable(self, api: Api, team: Team) -> None:
        """PATCH or DELETE of a built-in role: 409 ``invalid_state``."""
        patched = api.client.patch(
            f"{team.base}/roles/viewer", json={"name": "Watcher"}, headers=team.headers
        )
        assert_error(patched, 409, "invalid_state")
        deleted = api.client.delete(f"{team.base}/roles/admin", headers=team.headers)
        assert_error(deleted, 409, "invalid_state")

    def test_a_role_change_reaches_its_holders_and_a_held_role_cannot_go(
        self, api: Api, team: Team
    ) -> None:
        """PATCH 200 changes what holders may do at once; DELETE while held: 409."""
        team.create_role({"slug": "ops", "name": "Ops", "permissions": ["backups:read"]})
        olly, olly_id = team.join("olly@example.com", "ops")
        path = f"{team.base}/backups"
        assert_error(
            api.client.post(path, json={"name": "n", "kind": "manual"}, headers=bearer(olly)),
            403,
            "forbidden",
        )
        patched = api.client.patch(
            f"{team.base}/roles/ops",
            json={"permissions": ["backups:read", "backups:write"]},
            headers=team.headers,
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["permissions"] == ["backups:read", "backups:write"]
        created = api.client.post(path, json={"name": "n", "kind": "manual"}, headers=bearer(olly))
        assert created.status_code == 201
        held = api.client.delete(f"{team.base}/roles/ops", headers=team.headers)
        assert_error(held, 409, "invalid_state")
        assert team.patch_member(olly_id, "viewer").status_code == 200
        assert api.client.delete(f"{team.base}/roles/ops", headers=team.headers).status_code == 204
        gone = api.client.get(f"{team.base}/roles/ops", headers=team.headers)
        assert_error(gone, 404, "not_found")
        actions = [e["action"] for e in team.audit("role.delete")]
        assert actions == ["role.delete"]

    def test_roles_never_hold_more_than_their_maker(self, api: Api, team: Team) -> None:
        """A role manager without ``artifacts:delete`` cannot create or widen a role with
        it: 403 naming the slug, audited as denied."""
        team.create_role(
            {
                "slug": "role-admin",
                "name": "Role admin",
                "permissions": ["roles:read", "roles:write", "backups:read"],
            }
        )
        rita, _ = team.join("rita@example.com", "role-admin")
        refused = team.create_role(
            {"slug": "wide", "name": "Wide", "permissions": ["artifacts:delete"]}, token=rita
        )
        assert_error(refused, 403, "forbidden", "missing permission artifacts:delete")
        ok = team.create_role(
            {"slug": "narrow", "name": "Narrow", "permissions": ["backups:read"]}, token=rita
        )
        assert ok.status_code == 201
        widened = api.client.patch(
            f"{team.base}/roles/role-admin",
            json={"permissions": ["roles:read", "roles:write", "workspaces:write"]},
            headers=bearer(rita),
        )
        assert_error(widened, 403, "forbidden", "missing permission workspaces:write")
        assert [e["outcome"] for e in team.audit("role.create")] == [
            "success",
            "denied",
            "success",
        ]

    def test_a_role_holding_more_than_the_caller_cannot_be_changed_or_deleted(
        self, api: Api, team: Team
    ) -> None:
        """Narrowing or deleting a role with a permission the caller lacks: 403."""
        team.create_role(
            {"slug": "role-admin", "name": "R", "permissions": ["roles:read", "roles:write"]}
        )
        team.create_role({"slug": "danger", "name": "D", "permissions": ["artifacts:delete"]})
        rita, _ = team.join("rita@example.com", "role-admin")
        narrowed = api.client.patch(
            f"{team.base}/roles/danger", json={"permissions": []}, headers=bearer(rita)
        )
        assert_error(narrowed, 403, "forbidden", "missing permission artifacts:delete")
        deleted = api.client.delete(f"{team.base}/roles/danger", headers=bearer(rita))
        assert_error(deleted, 403, "forbidden", "missing permission artifacts:delete")
        renamed = api.client.patch(
            f"{team.base}/roles/role-admin", json={"name": "Roles"}, headers=bearer(rita)
        )
        assert renamed.status_code == 200, renamed.text
        assert [e["outcome"] for e in team.audit("role.delete")] == ["denied"]

    @pytest.mark.parametrize(
        ("body", "status", "code"),
        [
            ({"slug": "ops", "name": "", "permissions": []}, 400, "invalid_request"),
            ({"slug": "ops", "name": "n", "permissions": "x"}, 400, "invalid_request"),
            ({"slug": "ops", "name": "n"}, 400, "invalid_request"),
            ({"slug": "ops", "name": "n", "permissions": [], "x": 1}, 400, "invalid_request"),
            ({"slug": "ops", "name": "n", "permissions": ["nope:nope"]}, 422, "validation_failed"),
        ],
    )
    def test_bad_role_bodies(
        self, team: Team, body: dict[str, Any], status: int, code: str
    ) -> None:
        """400 for shape, 422 for permissions outside the catalog."""
        assert_error(team.create_role(body), status, code)

    def test_bad_patch_bodies(self, api: Api, team: Team) -> None:
        """Unknown fields (``slug`` too), nulls and wrong types: 400."""
        team.create_role({"slug": "ops", "name": "Ops", "permissions": []})
        for body in ({"slug": "other"}, {"name": None}, {"permissions": [1]}):
            response = api.client.patch(f"{team.base}/roles/ops", json=body, headers=team.headers)
            assert_error(response, 400, "invalid_request")
        missing = api.client.patch(f"{team.base}/roles/ghost", json={}, headers=team.headers)
        assert_error(missing, 404, "not_found")
        bad = api.client.get(f"{team.base}/roles/Bad_Slug", headers=team.headers)
        assert_error(bad, 400, "invalid_request")

    def test_a_blocked_workspace_refuses_role_and_member_changes(
        self, api: Api, team: Team
    ) -> None:
        """409 ``billing_restricted``; reads still work."""
        _, bob_id = team.join("bob@example.com", "viewer")
        api.facade.workspaces.set_billing_state(team.workspace_id, BillingState.BLOCKED)
        created = team.create_role({"slug": "ops", "name": "Ops", "permissions": []})
        assert_error(created, 409, "billing_restricted")
        assert_error(team.patch_member(bob_id, "member"), 409, "billing_restricted")
        assert api.client.get(f"{team.base}/members", headers=team.headers).status_code == 200
