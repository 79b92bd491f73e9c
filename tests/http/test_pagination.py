"""``?limit=`` and ``?cursor=`` on list endpoints (contract section 1): parsing, the
envelope and the cursor on the wire, and the role list's paging (done by the HTTP adapter
over the use case's whole list). Order and completeness of the facade's lists:
``tests/usecases/test_listing_order.py``."""

from __future__ import annotations

import base64
from typing import Any
from uuid import UUID

import pytest

from support.world import Api, bearer


def walk(api: Api, path: str, token: str, limit: int) -> list[dict[str, Any]]:
    """Every item of a list, page by page, checking each page's size."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = api.client.get(path, params=params, headers=bearer(token))
        assert response.status_code == 200, response.text
        page = response.json()
        assert set(page) == {"data", "next_cursor"}
        assert len(page["data"]) <= limit
        items.extend(page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            return items
        assert isinstance(cursor, str)
        assert len(page["data"]) == limit


def busy_workspace(api: Api, renames: int) -> tuple[str, UUID]:
    """An admin session in a workspace with ``renames + 2`` audit events."""
    token, workspace_id = api.workspace_admin("ada@example.com", "Name 0")
    for number in range(1, renames + 1):
        response = api.client.patch(
            f"/v1/workspaces/{workspace_id}", json={"name": f"Name {number}"}, headers=bearer(token)
        )
        assert response.status_code == 200
    return token, workspace_id


class TestLimit:
    """``limit`` is 1..200, default 50."""

    @pytest.mark.parametrize(
        "limit", ["0", "201", "-1", "abc", "", "1.5", "²", "1e2", " 5", "10000"]
    )
    @pytest.mark.parametrize("path", ["/v1/workspaces", "audit"])
    def test_bad_limit_is_400(self, api: Api, limit: str, path: str) -> None:
        """Out of range or not a decimal integer: 400 ``invalid_request``."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        if path == "audit":
            path = f"/v1/workspaces/{workspace_id}/audit"
        response = api.client.get(path, params={"limit": limit}, headers=bearer(token))
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "invalid_request"

    @pytest.mark.parametrize("limit", ["1", "200", "50", "007"])
    def test_limits_in_range_are_accepted(self, api: Api, limit: str) -> None:
        """1 and 200 are the bounds."""
        token = api.person("ada@example.com")
        response = api.client.get("/v1/workspaces", params={"limit": limit}, headers=bearer(token))
        assert response.status_code == 200

    def test_default_limit_is_50(self, api: Api) -> None:
        """Without ``limit`` a page holds 50 items and points to the next page."""
        token, workspace_id = busy_workspace(api, 0)
        path = f"/v1/workspaces/{workspace_id}/audit"
        for number in range(55):
            api.client.patch(
                f"/v1/workspaces/{workspace_id}", json={"name": f"N{number}"}, headers=bearer(token)
            )
        page = api.client.get(path, headers=bearer(token)).json()
        assert len(page["data"]) == 50
        assert page["next_cursor"] is not None
        rest = api.client.get(
            path, params={"cursor": page["next_cursor"]}, headers=bearer(token)
        ).json()
        assert len(rest["data"]) == 57 - 50
        assert rest["next_cursor"] is None


class TestCursor:
    """Cursors are opaque; anything not issued by the service is 400."""

    @pytest.mark.parametrize(
        "cursor",
        [
            "garbage",
            "!!!",
            "",
            "é",
            base64.urlsafe_b64encode(b"hello").decode(),
            base64.urlsafe_b64encode(b"2026-01-01T00:00:00+00:00|not-a-uuid").decode(),
            base64.urlsafe_b64encode(
                b"2026-01-01T00:00:00|00000000-0000-0000-0000-000000000000"
            ).decode(),
            base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        ],
    )
    def test_garbage_cursor_is_400(self, api: Api, cursor: str) -> None:
        """A cursor this service did not issue: 400 ``invalid_request``."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        for path in ("/v1/workspaces", f"/v1/workspaces/{workspace_id}/audit"):
            response = api.client.get(path, params={"cursor": cursor}, headers=bearer(token))
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "invalid_request"

    def test_following_next_cursor_agrees_with_one_big_page(self, api: Api) -> None:
        """Pages of one and of three, each cursor sent back as issued, give what one page
        of 200 gives (the order and completeness of each list:
        ``tests/usecases/test_listing_order.py``)."""
        token, workspace_id = busy_workspace(api, 6)
        path = f"/v1/workspaces/{workspace_id}/audit"
        walked = walk(api, path, token, 1)
        whole = api.client.get(path, params={"limit": 200}, headers=bearer(token)).json()
        assert whole["next_cursor"] is None
        assert walked == whole["data"]
        assert walk(api, path, token, 3) == walked
        assert len(walked) == 8


class TestRoles:
    """The role list paginates like every list (contract section 1; issue 12, finding 8):
    built-in roles, then custom roles by slug, in pages of ``limit``."""

    def test_pages_follow_the_cursor(self, api: Api) -> None:
        """Five custom roles over pages of 2: every role once, in the list's order."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}/roles"
        for slug in ("ops-e", "ops-a", "ops-d", "ops-c", "ops-b"):
            created = api.client.post(
                path,
                json={"slug": slug, "name": slug, "permissions": ["backups:read"]},
                headers=bearer(token),
            )
            assert created.status_code == 201, created.text
        whole = api.client.get(path, headers=bearer(token)).json()
        assert whole["next_cursor"] is None
        slugs = [role["slug"] for role in whole["data"]]
        assert slugs == ["admin", "member", "viewer", "ops-a", "ops-b", "ops-c", "ops-d", "ops-e"]
        for limit in (1, 2, 3, 7, 8):
            assert [role["slug"] for role in walk(api, path, token, limit)] == slugs

    def test_a_deleted_roles_cursor_still_continues_after_it(self, api: Api) -> None:
        """Keyset on the slug: the role a cursor names may be gone; the next page starts
        after it all the same."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}/roles"
        for slug in ("ops-a", "ops-b", "ops-c"):
            body = {"slug": slug, "name": slug, "permissions": []}
            assert api.client.post(path, json=body, headers=bearer(token)).status_code == 201
        first = api.client.get(path, params={"limit": 4}, headers=bearer(token)).json()
        assert [role["slug"] for role in first["data"]][-1] == "ops-a"
        assert api.client.delete(f"{path}/ops-a", headers=bearer(token)).status_code == 204
        rest = api.client.get(
            path, params={"limit": 4, "cursor": first["next_cursor"]}, headers=bearer(token)
        ).json()
        assert [role["slug"] for role in rest["data"]] == ["ops-b", "ops-c"]

    @pytest.mark.parametrize("limit", ["0", "201", "abc", ""])
    def test_a_bad_limit_is_400(self, api: Api, limit: str) -> None:
        """The same limits as every list."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        response = api.client.get(
            f"/v1/workspaces/{workspace_id}/roles", params={"limit": limit}, headers=bearer(token)
        )
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "invalid_request"

    def test_a_bad_cursor_is_400(self, api: Api) -> None:
        """Garbage, a cursor of another list, a slug that is no slug: 400."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        audit = api.client.get(
            f"/v1/workspaces/{workspace_id}/audit", params={"limit": 1}, headers=bearer(token)
        ).json()["next_cursor"]
        forged = base64.urlsafe_b64encode(b"role:NOT A SLUG").decode().rstrip("=")
        for cursor in ("not-a-cursor!", audit, forged):
            response = api.client.get(
                f"/v1/workspaces/{workspace_id}/roles",
                params={"cursor": cursor},
                headers=bearer(token),
            )
            assert response.status_code == 400, (cursor, response.text)
            assert response.json()["error"]["code"] == "invalid_request"
