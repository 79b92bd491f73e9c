"""The command-line client end to end against ``strongroom serve`` over a socket: in-process
through click's CliRunner for most commands, and the real ``strongroom`` executable in a
subprocess for sign-in, exit codes and the credentials file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx2
import pytest
from click.testing import CliRunner, Result

from strongroom.client import AuthenticationError, Client, Retention
from strongroom.entrypoints.cli import cli
from support.client_people import PASSWORD, admin_in_new_workspace, approve
from support.serve_process import free_port, serving

STRONGROOM = Path(sys.executable).with_name("strongroom")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``strongroom serve`` over a loopback socket; its URL and data directory."""
    root = tmp_path_factory.mktemp("cli-live")
    with serving(root / "data", free_port(), root / "serve.log") as url:
        yield url, root / "data"


@pytest.fixture
def url(live: tuple[str, Path]) -> str:
    """The live server's URL."""
    return live[0]


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$XDG_CONFIG_HOME`` (and no STRONGROOM_* variable)."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for name in ("STRONGROOM_SERVER", "STRONGROOM_TOKEN", "STRONGROOM_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    return home


def strongroom(*argv: str, stdin: str | None = None) -> Result:
    """``strongroom ARGV`` in-process."""
    return CliRunner().invoke(cli, list(argv), input=stdin, catch_exceptions=False)


def as_json(result: Result) -> Any:
    """A ``--json`` command's standard output, parsed; the command must have succeeded."""
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def person(url: str, config_home: Path, request: pytest.FixtureRequest) -> Iterator[Client]:
    """A person admin of a fresh workspace, stored as signed in (as ``login`` leaves it)."""
    email = f"{re.sub(r'[^a-z0-9]', '', request.node.name.lower())[:40]}@example.com"
    with Client(url) as anonymous:
        admin = admin_in_new_workspace(anonymous, email)
        me = admin.get_me()
    path = config_home / "strongroom" / "credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"server": url, "token": admin.token, "workspace_id": str(me.workspace_id)})
    )
    path.chmod(0o600)
    with Client(url, admin.token) as client:
        yield client


def upload_run(client: Client, backup: str, content: bytes, name: str = "data.bin") -> UUID:
    """A finished manual run of ``backup`` holding one artifact; the artifact's id."""
    run = client.start_run(backup)
    plan = client.request_upload(run.id, name, len(content), hashlib.sha256(content).hexdigest())
    client.upload(plan.url, content, plan.headers)  # type: ignore[union-attr]
    client.confirm_run(run.id)
    return plan.artifact_id


class TestWorkspacesAndBackups:
    """workspace and backup commands, as tables and as JSON."""

    def test_workspace_list_create_use(self, person: Client) -> None:
        """A created workspace is listed; `use` selects it (the next commands act there)."""
        listed = as_json(strongroom("workspace", "list", "--json"))
        assert len(listed) == 1
        created = as_json(strongroom("workspace", "create", "Second", "--json"))
        table = strongroom("workspace", "list")
        assert "Second" in table.stdout
        assert "NAME" in table.stdout
        used = strongroom("workspace", "use", "Second")
        assert used.exit_code == 0, used.output
        assert as_json(strongroom("whoami", "--json"))["workspace_id"] == created["id"]
        as_json(strongroom("backup", "create", "only-here", "--json"))
        names = [b["name"] for b in as_json(strongroom("backup", "list", "--json"))]
        assert names == ["only-here"]

    def test_backup_lifecycle(self, person: Client) -> None:
        """create, set (retention, name), show, pause, resume, list, delete by name."""
        created = as_json(strongroom("backup", "create", "daily", "--kind", "manual", "--json"))
        assert created["state"] == "draft"
        changed = as_json(strongroom("backup", "set", "daily", "--expire-after", "P30D", "--json"))
        assert changed["retention"] == {"expire_after": "P30D", "lock_for": "PT0S"}
        assert changed["state"] == "active"
        renamed = as_json(strongroom("backup", "set", "daily", "--name", "nightly", "--json"))
        assert renamed["name"] == "nightly"
        assert renamed["retention"] == {"expire_after": "P30D", "lock_for": "PT0S"}
        assert as_json(strongroom("backup", "pause", "nightly", "--json"))["paused"] is True
        assert as_json(strongroom("backup", "resume", created["id"], "--json"))["paused"] is False
        shown = strongroom("backup", "show", "nightly")
        assert "P30D" in shown.stdout
        listed = strongroom("backup", "list")
        assert "nightly" in listed.stdout
        deleted = strongroom("backup", "delete", "nightly", "--yes")
        assert deleted.exit_code == 0, deleted.output
        assert as_json(strongroom("backup", "list", "--json")) == []

    def test_set_configures_a_cloud_backup(self, person: Client) -> None:
        """--source (JSON), credentials from standard input (never the command line), a
        schedule in a timezone, then --no-schedule clears it and --timezone alone keeps
        the cron line."""
        strongroom("backup", "create", "bucket", "--kind", "cloud")
        source = '{"type": "s3", "endpoint": "https://s3.example.com", "bucket": "photos"}'
        configured = as_json(
            strongroom(
                "backup",
                "set",
                "bucket",
                "--source",
                source,
                "--credentials-stdin",
                "--schedule",
                "0 3 * * *",
                "--timezone",
                "Europe/Paris",
                "--expire-after",
                "P7D",
                "--json",
                stdin='{"access_key_id": "AKIA", "secret_access_key": "s3cr3t"}',
            )
        )
        assert configured["source"]["bucket"] == "photos"
        assert configured["has_credentials"] is True
        assert configured["schedule"] == {"cron": "0 3 * * *", "timezone": "Europe/Paris"}
        assert configured["state"] == "active"
        moved = as_json(strongroom("backup", "set", "bucket", "--timezone", "UTC", "--json"))
        assert moved["schedule"] == {"cron": "0 3 * * *", "timezone": "UTC"}
        cleared = as_json(strongroom("backup", "set", "bucket", "--no-schedule", "--json"))
        assert cleared["schedule"] is None
        bad = strongroom("backup", "set", "bucket", "--source", "{not json")
        assert bad.exit_code == 2

    def test_delete_without_yes_asks_and_a_no_keeps_the_backup(self, person: Client) -> None:
        """Answering no aborts (exit 1) and the backup stays."""
        strongroom("backup", "create", "keep")
        refused = strongroom("backup", "delete", "keep", stdin="n\n")
        assert refused.exit_code == 1
        assert [b["name"] for b in as_json(strongroom("backup", "list", "--json"))] == ["keep"]

    def test_api_refusals_exit_1_with_message_code_and_request_id(self, person: Client) -> None:
        """A duplicate name: exit 1, the API's message, code and request id on stderr."""
        strongroom("backup", "create", "dup")
        refused = strongroom("backup", "create", "dup")
        assert refused.exit_code == 1
        assert "name_taken" in refused.stderr
        assert re.search(r"request req_[0-9a-f-]{36}", refused.stderr)
        assert refused.stdout == ""
        scripted = strongroom("backup", "create", "dup", "--json")
        assert scripted.exit_code == 1
        error = json.loads(scripted.stdout)["error"]
        assert error["code"] == "name_taken"
        assert error["request_id"].startswith("req_")

    def test_usage_errors_exit_2(self, person: Client) -> None:
        """An unknown kind or a missing argument is a usage error."""
        assert strongroom("backup", "create", "x", "--kind", "weekly").exit_code == 2
        assert strongroom("run", "show").exit_code == 2
        assert strongroom("run", "show", "not-a-uuid").exit_code == 2


class TestRunsAndArtifacts:
    """run and artifact commands over real uploads."""

    def test_run_list_show_wait_cancel(self, person: Client) -> None:
        """A finished run waits with exit 0; a running one times out with exit 1; a failed
        one exits 1 naming its error; cancel asks a running run to stop."""
        workspace_id = person.get_me().workspace_id
        assert workspace_id is not None
        backup = person.create_backup(workspace_id, "files", "manual")
        person.update_backup(backup.id, retention=Retention("P7D"))
        upload_run(person, str(backup.id), b"one")
        runs = as_json(strongroom("run", "list", "files", "--json"))
        assert [r["state"] for r in runs] == ["succeeded"]
        done = strongroom("run", "wait", runs[0]["id"])
        assert done.exit_code == 0
        assert "succeeded" in done.stdout
        assert as_json(strongroom("run", "show", runs[0]["id"], "--json"))["artifact_count"] == 1

        running = person.start_run(backup.id)
        waited = strongroom("run", "wait", str(running.id), "--timeout", "0.2", "--interval", "0.1")
        assert waited.exit_code == 1
        assert "still running" in waited.stderr
        cancelled = as_json(strongroom("run", "cancel", str(running.id), "--json"))
        assert cancelled["cancel_requested"] is True
        person.fail_run(running.id, "disk on fire")
        failed = strongroom("run", "wait", str(running.id))
        assert failed.exit_code == 1
        assert as_json(strongroom("run", "list", "files", "--state", "succeeded", "--json"))

    def test_artifact_list_pull_delete(self, person: Client, tmp_path: Path) -> None:
        """pull writes the file with the verified sha256; delete refuses the last one."""
        workspace_id = person.get_me().workspace_id
        assert workspace_id is not None
        backup = person.create_backup(workspace_id, "docs", "manual")
        person.update_backup(backup.id, retention=Retention("P7D"))
        content = os.urandom(300_000)
        artifact_id = upload_run(person, str(backup.id), content, "docs.tar")
        second = upload_run(person, str(backup.id), b"second", "second.bin")
        listed = as_json(strongroom("artifact", "list", "--backup", "docs", "--json"))
        assert {a["id"] for a in listed} == {str(artifact_id), str(second)}
        pulled = as_json(
            strongroom("artifact", "pull", str(artifact_id), "-o", str(tmp_path), "--json")
        )
        assert (tmp_path / "docs.tar").read_bytes() == content
        assert pulled["sha256"] == hashlib.sha256(content).hexdigest()
        again = strongroom("artifact", "pull", str(artifact_id), "-o", str(tmp_path))
        assert again.exit_code == 1
        assert "exists" in again.stderr
        assert strongroom("artifact", "delete", str(second), "--yes").exit_code == 0
        last = strongroom("artifact", "delete", str(artifact_id), "--yes")
        assert last.exit_code == 1
        assert "last_artifact" in last.stderr

    def test_pull_refuses_bytes_that_do_not_match(
        self, person: Client, live: tuple[str, Path], tmp_path: Path
    ) -> None:
        """Storage hands back other bytes of the same size: exit 1, no file left behind."""
        workspace_id = person.get_me().workspace_id
        assert workspace_id is not None
        backup = person.create_backup(workspace_id, "tampered", "manual")
        person.update_backup(backup.id, retention=Retention("P7D"))
        content = b"tamper-me-" + os.urandom(1000)
        artifact_id = upload_run(person, str(backup.id), content, "t.bin")
        (stored,) = [p for p in live[1].rglob("*") if p.is_file() and p.read_bytes() == content]
        stored.write_bytes(b"X" * len(content))
        out = tmp_path / "out"
        out.mkdir()
        refused = strongroom("artifact", "pull", str(artifact_id), "-o", str(out))
        assert refused.exit_code == 1
        assert "does not match" in refused.stderr
        assert list(out.iterdir()) == []


class TestCredentials:
    """The credentials file, overrides and sign-out."""

    def test_a_file_others_can_read_is_refused(self, person: Client, config_home: Path) -> None:
        """Mode 0644: exit 1 naming the file and the fix; nothing is sent."""
        path = config_home / "strongroom" / "credentials.json"
        path.chmod(0o644)
        refused = strongroom("whoami")
        assert refused.exit_code == 1
        assert "chmod 600" in refused.stderr

    def test_token_and_server_from_the_environment(
        self, person: Client, url: str, config_home: Path
    ) -> None:
        """STRONGROOM_SERVER and STRONGROOM_TOKEN work without any file."""
        (config_home / "strongroom" / "credentials.json").unlink()
        result = CliRunner().invoke(
            cli,
            ["whoami", "--json"],
            env={"STRONGROOM_SERVER": url, "STRONGROOM_TOKEN": person.token or ""},
        )
        assert as_json(result)["principal"]["type"] == "user"

    def test_the_stored_session_is_never_sent_to_another_server(self, person: Client) -> None:
        """--server elsewhere: not signed in there (the token stays home)."""
        elsewhere = strongroom("whoami", "--server", f"http://127.0.0.1:{free_port()}")
        assert elsewhere.exit_code == 1
        assert "not signed in" in elsewhere.stderr

    def test_logout_revokes_and_forgets(self, person: Client, config_home: Path) -> None:
        """After logout the old token is refused and the file holds no token."""
        assert strongroom("logout").exit_code == 0
        stored = json.loads((config_home / "strongroom" / "credentials.json").read_text())
        assert "token" not in stored
        assert strongroom("whoami").exit_code == 1
        stale = CliRunner().invoke(cli, ["whoami"], env={"STRONGROOM_TOKEN": person.token or ""})
        assert stale.exit_code == 1
        assert "strongroom login" in stale.stderr
        with pytest.raises(AuthenticationError):
            person.get_me()


def test_the_executable_signs_in_with_the_device_flow(url: str, tmp_path: Path) -> None:
    """`strongroom login` (a real process) prints a code; once a person approves it the
    session is stored mode 0600 and `whoami`, `workspace create` and a refusal work with
    their exit codes."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")},
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    with Client(url) as anonymous:
        anonymous.idp_signup("cli@example.com", PASSWORD, "Cli")
        process = subprocess.Popen(
            [str(STRONGROOM), "login", "--server", url, "--no-browser"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        first = process.stderr.readline()
        code = re.search(r"code ([A-Z]{4}-[A-Z]{4})", first)
        assert code, first
        approve(anonymous, code[1], "cli@example.com")
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Signed in" in out
    path = tmp_path / "config" / "strongroom" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["token"].startswith("bks_")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(STRONGROOM), *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    me = run("whoami", "--json")
    assert me.returncode == 0, me.stderr
    assert json.loads(me.stdout)["user"]["email"] == "cli@example.com"
    created = run("workspace", "create", "Mine", "--use", "--json")
    assert created.returncode == 0, created.stderr
    assert run("backup", "create", "b").returncode == 0
    refused = run("backup", "create", "b")
    assert refused.returncode == 1
    assert "name_taken" in refused.stderr
    assert "request req_" in refused.stderr
    assert run("backup", "frobnicate").returncode == 2
    with httpx2.Client(trust_env=False) as http:
        assert http.get(f"{url}/healthz").status_code == 200


class TestStatus:
    """``strongroom status``: the health table, late and failing first; exit 1 on either."""

    def test_status_lists_health_and_exits_1_once_a_backup_fails(self, person: Client) -> None:
        for name in ("good", "bad"):
            strongroom("backup", "create", name, "--kind", "manual")
            strongroom("backup", "set", name, "--expire-after", "P30D")
        good = as_json(strongroom("backup", "show", "good", "--json"))["id"]
        upload_run(person, good, b"fine")
        calm = strongroom("status")
        assert calm.exit_code == 0, calm.output
        assert "good" in calm.stdout
        assert "bad" in calm.stdout
        bad = as_json(strongroom("backup", "show", "bad", "--json"))["id"]
        person.fail_run(person.start_run(bad).id, "disk full")
        alarmed = strongroom("status")
        assert alarmed.exit_code == 1, alarmed.output
        lines = [line for line in alarmed.stdout.splitlines() if "good" in line or "bad" in line]
        assert "failing" in lines[0]
        assert "disk full" in lines[0]
        assert "ok" in lines[1]
        answer = strongroom("status", "--json")
        assert answer.exit_code == 1
        shown = json.loads(answer.stdout)
        assert [h["status"] for h in shown["data"]] == ["failing", "ok"]
        assert shown["data"][0]["last_failure"]["error"] == "disk full"
        assert shown["data"][0]["backup_id"] == bad
