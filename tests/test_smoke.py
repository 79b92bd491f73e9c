"""The shortest path a new user takes: sign in, create a workspace, switch into it."""

from __future__ import annotations

from support.world import Api, bearer


def test_a_new_person_can_create_and_enter_a_workspace(api: Api) -> None:
    """Signing in, creating a workspace and switching gives an admin session scoped to it."""
    token, workspace_id = api.workspace_admin("ada@example.com")
    me = api.client.get("/v1/me", headers=bearer(token))
    assert me.status_code == 200
    assert me.json()["workspace_id"] == str(workspace_id)
    assert "workspaces:write" in me.json()["permissions"]
