"""``strongroom retention show|preview`` against ``strongroom serve`` over a socket: the
table of runs with keep or expire and the reasons, and ``--json``."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from strongroom.client import Client, Retention
from strongroom.entrypoints.cli import cli
from support.client_people import admin_in_new_workspace
from support.serve_process import free_port, serving


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``strongroom serve`` over a loopback socket."""
    root = tmp_path_factory.mktemp("cli-retention")
    with serving(root / "data", free_port(), root / "serve.log") as served:
        yield served


@pytest.fixture
def person(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Client]:
    """An admin of a fresh workspace, stored as signed in."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for name in ("STRONGROOM_SERVER", "STRONGROOM_TOKEN", "STRONGROOM_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    email = f"{re.sub(r'[^a-z0-9]', '', request.node.name.lower())[:40]}@example.com"
    with Client(url) as anonymous:
        admin = admin_in_new_workspace(anonymous, email)
        me = admin.get_me()
    path = home / "strongroom" / "credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"server": url, "token": admin.token, "workspace_id": str(me.workspace_id)})
    )
    path.chmod(0o600)
    with Client(url, admin.token) as client:
        yield client


def strongroom(*argv: str) -> Result:
    return CliRunner().invoke(cli, list(argv), catch_exceptions=False)


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def stored_run(client: Client, backup_id: Any, content: bytes) -> str:
    run = client.start_run(backup_id)
    plan = client.request_upload(run.id, "a.bin", len(content), hashlib.sha256(content).hexdigest())
    client.upload(plan.url, content, plan.headers)  # type: ignore[union-attr]
    client.confirm_run(run.id)
    return str(run.id)


def test_show_and_preview(person: Client) -> None:
    """show lists each run newest first with its reasons; preview tries keep rules."""
    workspace_id = person.get_me().workspace_id
    assert workspace_id is not None
    backup = person.create_backup(workspace_id, "docs", "manual")
    person.update_backup(backup.id, retention=Retention("P7D"))
    runs = [stored_run(person, backup.id, bytes([n])) for n in range(3)]
    shown = as_json(strongroom("retention", "show", "docs", "--json"))
    assert [verdict["run_id"] for verdict in shown] == runs[::-1]
    assert shown[0]["reasons"] == ["newest", "within P7D"]
    table = strongroom("retention", "show", "docs")
    assert table.exit_code == 0, table.output
    assert "RUN" in table.stdout
    assert "REASONS" in table.stdout
    assert "keep" in table.stdout
    time.sleep(1.2)  # the runs are older than the proposed PT1S
    previewed = as_json(
        strongroom(
            "retention", "preview", "docs", "--keep-last", "2", "--expire-after", "PT1S", "--json"
        )
    )
    assert [verdict["keep"] for verdict in previewed] == [True, True, False]
    assert previewed[1]["reasons"] == ["last 2"]
    assert person.get_backup(backup.id).retention == Retention("P7D")
