"""``strongroom serve`` with no configuration keeps its state across a restart (issue 3).

The real console script runs as a subprocess with nothing but ``--port`` and
``--data-dir`` (no ``STRONGROOM_*`` variable): the embedded default, SQLite under the data
dir. A person signs up and signs in over HTTP with the device flow, creates a workspace
and a backup; the process is stopped with SIGTERM and started again on the same data dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from integration_world import expect, sign_up_and_in
from live_server import client_for

from support.serve_process import free_port, serving
from support.world import bearer


def test_serve_with_no_configuration_keeps_its_state_across_a_restart(tmp_path: Path) -> None:
    """The workspace, the backup and the session token outlive the process."""
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    port = free_port()
    with serving(data_dir, port, log) as url, client_for(url) as client:
        token = sign_up_and_in(client, "ada@example.com")
        workspace = expect(
            client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)), 201
        )
        switched = expect(
            client.post(
                "/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=bearer(token)
            ),
            201,
        )
        scoped = bearer(switched["token"])
        backup: dict[str, Any] = expect(
            client.post(
                f"/v1/workspaces/{workspace['id']}/backups",
                json={"name": "Nightly", "kind": "manual"},
                headers=scoped,
            ),
            201,
        )
    assert "in SQLite at" in log.read_text()
    assert (data_dir / "strongroom.db").is_file()
    assert (data_dir / "secret_key").is_file()

    with serving(data_dir, port, log) as url, client_for(url) as client:
        me = expect(client.get("/v1/me", headers=scoped), 200)
        assert me["workspace_id"] == workspace["id"]
        assert me["user"]["email"] == "ada@example.com"
        assert (
            expect(client.get(f"/v1/workspaces/{workspace['id']}", headers=scoped), 200)
            == workspace
        )
        assert expect(client.get(f"/v1/backups/{backup['id']}", headers=scoped), 200) == backup
        listing = expect(
            client.get(f"/v1/workspaces/{workspace['id']}/backups", headers=scoped), 200
        )
        assert [item["id"] for item in listing["data"]] == [backup["id"]]
        renamed = client.patch(
            f"/v1/backups/{backup['id']}", json={"name": "Nightly DB"}, headers=scoped
        )
        assert expect(renamed, 200)["name"] == "Nightly DB"
