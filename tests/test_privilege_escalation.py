"""Privilege escalation is impossible (issue 4's acceptance): property-based tests.

A caller holding a random set of permissions (through a custom role, or as an API key)
tries to grant a random set through every path that grants: an API key, a custom role
(created or changed), an invitation, a member's new role. The grant succeeds exactly when
the caller holds every permission it hands out; otherwise it is 403 ``forbidden`` naming
a permission the caller lacks, and nothing was granted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from strategies import permission_sets
from strongroom.domain.permissions import Permission
from strongroom.domain.workspaces import Membership
from support.world import Api, bearer, make_client, make_facade

GRANTING = {
    "api_key": Permission.API_KEYS_WRITE,
    "role": Permission.ROLES_WRITE,
    "invitation": Permission.INVITATIONS_WRITE,
    "member": Permission.MEMBERS_WRITE,
}


def slugs(permissions: frozenset[Permission]) -> list[str]:
    return sorted(p.value for p in permissions)


class Workspace:
    """Ada's workspace, where the test makes roles and people."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.admin, self.workspace_id = api.workspace_admin("ada@example.com")
        self.base = f"/v1/workspaces/{self.workspace_id}"
        self._roles = 0

    def role(self, permissions: frozenset[Permission]) -> str:
        """A new custom role (made by the admin) holding ``permissions``."""
        self._roles += 1
        slug = f"role-{self._roles}"
        made = self.api.client.post(
            f"{self.base}/roles",
            json={"slug": slug, "name": slug, "permissions": slugs(permissions)},
            headers=bearer(self.admin),
        )
        assert made.status_code == 201, made.text
        return slug

    def person(self, email: str, role: str) -> tuple[str, str]:
        """A session of a new member with ``role`` scoped here, and their id."""
        token = self.api.person(email)
        me = self.api.client.get("/v1/me", headers=bearer(token)).json()
        with self.api.facade.deps.uow() as uow:
            uow.memberships.add(
                Membership(
                    self.workspace_id,
                    UUID(me["principal"]["id"]),
                    role,
                    self.api.facade.deps.clock.now(),
                )
            )
            uow.commit()
        return self.api.switch(token, self.workspace_id), me["principal"]["id"]

    def caller(self, held: frozenset[Permission], as_key: bool) -> str:
        """A token holding exactly ``held``: a member with a custom role, or an API key."""
        if as_key:
            key = self.api.client.post(
                "/v1/api-keys",
                json={"name": "caller", "permissions": slugs(held)},
                headers=bearer(self.admin),
            )
            assert key.status_code == 201, key.text
            token: str = key.json()["token"]
            return token
        return self.person("caller@example.com", self.role(held))[0]

    def permissions_of(self, token: str) -> frozenset[Permission]:
        me = self.api.client.get("/v1/me", headers=bearer(token)).json()
        return frozenset(Permission(slug) for slug in me["permissions"])


@contextmanager
def workspace() -> Iterator[Workspace]:
    facade = make_facade()
    with make_client(facade) as client:
        yield Workspace(Api(facade, client))


def assert_refused_naming_a_lacking_permission(response: Any, held: frozenset[Permission]) -> None:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "forbidden"
    slug = error["message"].removeprefix("missing permission ")
    assert Permission(slug) not in held


@given(
    held=permission_sets(),
    wanted=permission_sets(),
    path=st.sampled_from(sorted(GRANTING)),
    as_key=st.booleans(),
)
def test_nobody_grants_a_permission_they_lack(
    held: frozenset[Permission], wanted: frozenset[Permission], path: str, as_key: bool
) -> None:
    """Every granting path: allowed iff ``wanted`` is within what the caller holds."""
    held = held | {GRANTING[path]}
    with workspace() as ws:
        token = ws.caller(held, as_key)
        assert ws.permissions_of(token) == held
        allowed = wanted <= held
        if path == "api_key":
            response = ws.api.client.post(
                "/v1/api-keys",
                json={"name": "minted", "permissions": slugs(wanted)},
                headers=bearer(token),
            )
            if allowed:
                assert response.status_code == 201, response.text
                assert ws.permissions_of(response.json()["token"]) == wanted
        elif path == "role":
            response = ws.api.client.post(
                f"{ws.base}/roles",
                json={"slug": "minted", "name": "Minted", "permissions": slugs(wanted)},
                headers=bearer(token),
            )
            if allowed:
                assert response.status_code == 201, response.text
            widened = ws.api.client.patch(
                f"{ws.base}/roles/{ws.role(frozenset())}",
                json={"permissions": slugs(wanted)},
                headers=bearer(token),
            )
            if allowed:
                assert widened.status_code == 200, widened.text
            else:
                assert_refused_naming_a_lacking_permission(widened, held)
        elif path == "invitation":
            role = ws.role(wanted)
            response = ws.api.client.post(
                f"{ws.base}/invitations",
                json={"email": "new@example.com", "role": role},
                headers=bearer(token),
            )
            if allowed:
                assert response.status_code == 201, response.text
                invitee = ws.api.person("new@example.com")
                accepted = ws.api.client.post(
                    f"/v1/invitations/{response.json()['id']}/accept", headers=bearer(invitee)
                )
                assert accepted.status_code == 200, accepted.text
                scoped = ws.api.switch(invitee, ws.workspace_id)
                assert ws.permissions_of(scoped) == wanted
        else:
            _, target = ws.person("target@example.com", ws.role(frozenset()))
            role = ws.role(wanted)
            response = ws.api.client.patch(
                f"{ws.base}/members/{target}", json={"role": role}, headers=bearer(token)
            )
            if allowed:
                assert response.status_code == 200, response.text
        if not allowed:
            assert_refused_naming_a_lacking_permission(response, held)


@given(held=permission_sets(), above=permission_sets())
def test_nobody_demotes_or_removes_someone_holding_more(
    held: frozenset[Permission], above: frozenset[Permission]
) -> None:
    """A member whose role holds a permission the caller lacks can be neither changed nor
    removed by that caller."""
    held = held | {Permission.MEMBERS_WRITE}
    with workspace() as ws:
        token = ws.caller(held, as_key=False)
        _, target = ws.person("target@example.com", ws.role(above))
        lower = ws.role(frozenset())
        changed = ws.api.client.patch(
            f"{ws.base}/members/{target}", json={"role": lower}, headers=bearer(token)
        )
        if above <= held:
            assert changed.status_code == 200, changed.text
            removed = ws.api.client.delete(f"{ws.base}/members/{target}", headers=bearer(token))
            assert removed.status_code == 204, removed.text
        else:
            assert_refused_naming_a_lacking_permission(changed, held)
            removed = ws.api.client.delete(f"{ws.base}/members/{target}", headers=bearer(token))
            assert_refused_naming_a_lacking_permission(removed, held)
