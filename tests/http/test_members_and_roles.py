"""HTTP tests of members and roles (api-spec 4, contract 3, 4 and 10).

The routes' wire shapes, status codes and order of checks. The rules (the last admin,
removal ending sessions, built-in and held roles, refusals of every escalation, billing):
``tests/usecases/test_member_and_role_rules.py`` and ``tests/usecases/test_members.py``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import httpx2
import pytest

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

    def test_a_change_answers_the_member_and_a_removal_204(self, team: Team) -> None:
        """PATCH: 200 with the member's new role; DELETE: 204 with no body; the refusals
        keep their codes (the rules: ``tests/usecases/test_member_and_role_rules.py``)."""
        _, bob_id = team.join("bob@example.com", "viewer")
        assert_error(team.patch_member(team.ada_id, "member"), 409, "last_admin")
        changed = team.patch_member(bob_id, "member")
        assert changed.status_code == 200, changed.text
        assert changed.json()["role"] == "member"
        assert set(changed.json()) == {"user_id", "email", "name", "role", "joined_at"}
        removed = team.remove(bob_id)
        assert removed.status_code == 204
        assert removed.content == b""

    def test_unknown_and_malformed_roles(self, team: Team) -> None:
        """A malformed slug is 400, an unknown one 422, an unknown member 404."""
        _, bob_id = team.join("bob@example.com", "viewer")
        assert_error(team.patch_member(bob_id, "Not A Slug"), 400, "invalid_request")
        assert_error(team.patch_member(bob_id, "ghost"), 422, "validation_failed")
        assert_error(team.patch_member(uuid4(), "viewer"), 404, "not_found")
        assert_error(team.remove(uuid4()), 404, "not_found")

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

    def test_role_changes_answer_the_role_and_refusals_their_codes(
        self, api: Api, team: Team
    ) -> None:
        """PATCH: 200 with the role, its permissions sorted; DELETE: 204; a taken slug 409
        ``name_taken``; a built-in role or a held one 409 ``invalid_state``."""
        team.create_role({"slug": "ops", "name": "Ops", "permissions": ["backups:read"]})
        assert_error(
            team.create_role({"slug": "ops", "name": "n", "permissions": []}), 409, "name_taken"
        )
        patched = api.client.patch(
            f"{team.base}/roles/ops",
            json={"permissions": ["backups:write", "backups:read"]},
            headers=team.headers,
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["permissions"] == ["backups:read", "backups:write"]
        builtin = api.client.delete(f"{team.base}/roles/admin", headers=team.headers)
        assert_error(builtin, 409, "invalid_state")
        _, olly_id = team.join("olly@example.com", "ops")
        held = api.client.delete(f"{team.base}/roles/ops", headers=team.headers)
        assert_error(held, 409, "invalid_state")
        assert team.patch_member(olly_id, "viewer").status_code == 200
        deleted = api.client.delete(f"{team.base}/roles/ops", headers=team.headers)
        assert (deleted.status_code, deleted.content) == (204, b"")

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
