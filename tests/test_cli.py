"""The ``strongroom`` command's operator commands, on the embedded SQLite database."""

from __future__ import annotations

import hashlib
import io
import time
from pathlib import Path
from uuid import UUID

import pytest
from starlette.testclient import TestClient

from strongroom.entrypoints.cli import main
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings

PASSWORD = "correct horse battery staple"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A fresh data directory."""
    return tmp_path / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command in-process; its exit code, standard output and error."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sign_in_over_http(client: TestClient, email: str) -> str:
    """The device flow over HTTP for an account that exists; a session token."""
    code = client.post("/idp/device/code", data={"client_id": "strongroom-cli"}).json()
    approved = client.post(
        "/idp/device",
        data={
            "user_code": code["user_code"],
            "email": email,
            "password": PASSWORD,
            "decision": "approve",
        },
        headers={"Accept": "application/json"},
    )
    assert approved.status_code == 200, approved.text
    token = client.post(
        "/idp/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": code["device_code"],
            "client_id": "strongroom-cli",
        },
    ).json()["access_token"]
    session = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {token}"})
    return str(session.json()["token"])


def admin_of_new_workspace(client: TestClient, email: str) -> tuple[dict[str, str], UUID]:
    """A scoped admin session's headers and the new workspace's id."""
    token = sign_in_over_http(client, email)
    headers = {"Authorization": f"Bearer {token}"}
    workspace_id = client.post("/v1/workspaces", json={"name": "Acme"}, headers=headers).json()[
        "id"
    ]
    switched = client.post("/v1/auth/switch", json={"workspace_id": workspace_id}, headers=headers)
    return {"Authorization": f"Bearer {switched.json()['token']}"}, UUID(workspace_id)


class TestOperatorCommands:
    """Operator commands act on the configured database; changes apply on the next request."""

    def test_user_add_creates_an_account_that_can_sign_in(
        self,
        data_dir: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """`admin user-add EMAIL --password-stdin` adds an account usable by the device flow."""
        monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
        code, out, _ = run(
            capsys,
            "admin",
            "user-add",
            "ops@example.com",
            "--password-stdin",
            "--data-dir",
            str(data_dir),
        )
        assert code == 0
        assert "ops@example.com" in out
        with TestClient(create_app(Settings(data_dir=data_dir))) as client:
            token = sign_in_over_http(client, "ops@example.com")
            assert (
                client.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["user"][
                    "email"
                ]
                == "ops@example.com"
            )

    def test_billing_and_quota_take_effect_without_restart_and_are_audited_as_system(
        self,
        data_dir: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A running server refuses writes once the operator blocks the workspace, applies a
        new quota at once, and both changes appear in the workspace's audit list as system."""
        monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
        run(
            capsys,
            "admin",
            "user-add",
            "ada@example.com",
            "--password-stdin",
            "--data-dir",
            str(data_dir),
        )
        with TestClient(create_app(Settings(data_dir=data_dir))) as client:
            headers, workspace_id = admin_of_new_workspace(client, "ada@example.com")
            code, out, _ = run(
                capsys,
                "admin",
                "quota",
                str(workspace_id),
                "backups_per_workspace",
                "1",
                "--data-dir",
                str(data_dir),
            )
            assert code == 0
            assert "backups_per_workspace limit is now 1" in out
            backups = f"/v1/workspaces/{workspace_id}/backups"
            assert (
                client.post(
                    backups, json={"name": "a", "kind": "manual"}, headers=headers
                ).status_code
                == 201
            )
            refused = client.post(backups, json={"name": "b", "kind": "manual"}, headers=headers)
            assert refused.json()["error"]["code"] == "quota_exceeded"

            code, _, _ = run(
                capsys,
                "admin",
                "billing",
                str(workspace_id),
                "blocked",
                "--data-dir",
                str(data_dir),
            )
            assert code == 0
            patch = client.patch(
                f"/v1/workspaces/{workspace_id}", json={"name": "B"}, headers=headers
            )
            assert patch.status_code == 409
            assert patch.json()["error"]["code"] == "billing_restricted"

            events = client.get(f"/v1/workspaces/{workspace_id}/audit", headers=headers).json()[
                "data"
            ]
            system_actions = {
                e["action"] for e in events if e["actor"] == {"type": "system", "id": None}
            }
            assert system_actions == {"billing.update", "quota.update"}

    def test_unknown_workspace_and_bad_values_exit_non_zero_with_a_message(
        self, data_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown workspace exits 1 naming not_found; a bad state or limit is a usage error."""
        code, _, err = run(
            capsys,
            "admin",
            "billing",
            "00000000-0000-0000-0000-000000000000",
            "blocked",
            "--data-dir",
            str(data_dir),
        )
        assert code == 1
        assert "not_found" in err
        nobody = "00000000-0000-0000-0000-000000000000"
        bad_state = main(["admin", "billing", nobody, "broke", "--data-dir", str(data_dir)])
        assert bad_state == 2
        bad_limit = main(
            ["admin", "quota", nobody, "storage_bytes", "-1", "--data-dir", str(data_dir)]
        )
        assert bad_limit != 0


class TestMigrate:
    """`strongroom migrate` applies pending migrations once."""

    def test_migrate_applies_once_then_reports_nothing_pending(
        self, data_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The first run applies the initial migration; the second has nothing to do."""
        code, first, _ = run(capsys, "migrate", "--data-dir", str(data_dir))
        assert code == 0
        assert "applied initial" in first
        code, second, _ = run(capsys, "migrate", "--data-dir", str(data_dir))
        assert code == 0
        assert "none pending" in second


class TestRetentionCommand:
    """`strongroom retention run` removes expired artifacts once, as the system."""

    def test_removes_an_expired_artifact_but_not_the_last(
        self,
        data_dir: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Two artifacts expire after a second: one is removed, the backup's last stays."""
        monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
        argv = ["admin", "user-add", "ada@example.com", "--password-stdin"]
        assert run(capsys, *argv, "--data-dir", str(data_dir))[0] == 0
        with TestClient(create_app(Settings(data_dir=data_dir))) as client:
            headers, workspace_id = admin_of_new_workspace(client, "ada@example.com")
            backup = client.post(
                f"/v1/workspaces/{workspace_id}/backups",
                json={"name": "n", "kind": "manual"},
                headers=headers,
            ).json()["id"]
            client.patch(
                f"/v1/backups/{backup}",
                json={"retention": {"expire_after": "PT1S", "lock_for": "PT0S"}},
                headers=headers,
            )
            for name in ("a", "b"):
                started = client.post("/v1/runs", json={"backup_id": backup}, headers=headers)
                run_id = started.json()["id"]
                plan = client.post(
                    f"/v1/runs/{run_id}/upload-url",
                    json={"name": name, "size": 1, "sha256": hashlib.sha256(b"x").hexdigest()},
                    headers=headers,
                ).json()
                assert client.put(plan["url"], content=b"x").status_code == 200
                confirmed = client.post(f"/v1/runs/{run_id}/confirm", headers=headers)
                assert confirmed.status_code == 200, confirmed.text
        time.sleep(1.1)
        code, out, _ = run(capsys, "retention", "run", "--data-dir", str(data_dir))
        assert code == 0
        assert "removed 1 expired artifacts (kept 1 last" in out
        code, out, _ = run(capsys, "retention", "run", "--data-dir", str(data_dir))
        assert "removed 0" in out
