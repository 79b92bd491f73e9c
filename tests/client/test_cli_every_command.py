"""Every command of ``strongroom``, found by walking click's command tree (a new command is
covered without being named here), takes ``--json`` and is run with it: the client's
against a live server, the server's own (``serve``, ``migrate``, ``admin ...``) on a data
directory of the test's. Standard output parses as JSON on success and on error, and the
exit code follows docs/clients.md (0 success, 1 an error, 2 usage: the envelope's
``usage_error``, or the agent's ``bad_config``)."""

# ruff: noqa: F811 (the live-server fixtures of test_cli_client, imported)
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import Result
from test_cli_client import (  # noqa: F401 (fixtures)
    STRONGROOM,
    config_home,
    live,
    person,
    strongroom,
    upload_run,
    url,
)

from strongroom.client import Client, Retention
from strongroom.entrypoints.cli import cli
from support.client_people import admin_in_new_workspace
from support.serve_process import free_port, unconfigured_environment

USAGE_CODES = {"usage_error", "bad_config"}  # exit 2
# A database the server processes refuse at once (they open it before they run).
NO_DATABASE = "mysql://nowhere/strongroom"
SERVER_PROCESSES = {("serve",), ("scheduler",), ("executor",)}
UNKNOWN = "00000000-0000-4000-8000-00000000dead"
UNREACHABLE = "http://127.0.0.1:9"


def leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command that runs (not a group) under ``group``."""
    found = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += leaves(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def takes_json(path: tuple[str, ...]) -> bool:
    return any("--json" in getattr(p, "opts", ()) for p in command_at(path).params)


WITH_JSON = [path for path in leaves(cli) if takes_json(path)]


def refused_argv(path: tuple[str, ...], tmp: Path) -> list[str]:
    """The command with every required argument and option filled, naming nothing that
    exists (so it is refused, or succeeds when it needs nothing of the server)."""
    argv = list(path)
    for param in command_at(path).params:
        if not param.required:
            continue
        value = str(tmp / "absent") if isinstance(param.type, click.Path) else UNKNOWN
        if isinstance(param.type, click.Choice):
            value = str(param.type.choices[0])
        if isinstance(param, click.Option):
            argv += [param.opts[0]] if param.is_flag else [param.opts[0], value]
        else:
            argv.append(value)
    if path == ("login",):
        argv += ["--server", UNREACHABLE]  # no device flow to wait for
    if any("--data-dir" in getattr(p, "opts", ()) for p in command_at(path).params):
        argv += ["--data-dir", str(tmp / "data")]  # the server's own: a data dir of the test's
    if path in SERVER_PROCESSES:
        argv += ["--database-url", NO_DATABASE]  # refused before it would run until stopped
    return [*argv, "--json"]


def check_exit_and_json(result: Result) -> Any:
    """Standard output is JSON; its exit code is the table's."""
    try:
        printed = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"not JSON (exit {result.exit_code}): {result.stdout!r} {result.stderr!r}")
    error = printed.get("error") if isinstance(printed, dict) else None
    if error is None:
        assert result.exit_code == 0, printed
    else:
        assert set(error) >= {"code", "message", "request_id"}
        assert result.exit_code == (2 if error["code"] in USAGE_CODES else 1), error
    return printed


def test_every_command_takes_json() -> None:
    """The server's own commands, the agent and completion included."""
    assert [" ".join(path) for path in leaves(cli) if not takes_json(path)] == []
    assert {("serve",), ("migrate",), ("admin", "quota"), ("agent",)} <= set(WITH_JSON)


@pytest.mark.parametrize("path", WITH_JSON, ids=" ".join)
def test_usage_errors_are_json_and_exit_2(path: tuple[str, ...], config_home: Path) -> None:
    """An unknown option: exit 2 and the envelope on standard output."""
    result = strongroom(*path, "--no-such-option", "--json")
    assert check_exit_and_json(result)["error"]["code"] == "usage_error"
    assert result.stderr == ""


@pytest.fixture(scope="module")
def one_admin(live: tuple[str, Path]) -> str:
    """One admin for the refusals of every command (the server limits sign-ups per
    address, and each refusal names nothing that exists anyway); their token."""
    with Client(live[0]) as anonymous:
        return admin_in_new_workspace(anonymous, "every-command@example.com").token


@pytest.fixture
def signed_in(url: str, one_admin: str, config_home: Path, request: pytest.FixtureRequest) -> None:
    """``one_admin`` stored as signed in, as ``login`` leaves it (``logout`` revokes its
    session: it gets an admin of its own)."""
    token = one_admin
    if request.node.callspec.params["path"] == ("logout",):
        with Client(url) as anonymous:
            token = admin_in_new_workspace(anonymous, "logout@example.com").token
    with Client(url, token) as client:
        workspace_id = client.get_me().workspace_id
    path = config_home / "strongroom" / "credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"server": url, "token": token, "workspace_id": str(workspace_id)}))
    path.chmod(0o600)


@pytest.mark.parametrize("path", WITH_JSON, ids=" ".join)
@pytest.mark.usefixtures("signed_in")
def test_refusals_are_json_and_exit_1(path: tuple[str, ...], tmp_path: Path) -> None:
    """Every argument naming nothing that exists: JSON (the envelope when refused)."""
    check_exit_and_json(strongroom(*refused_argv(path, tmp_path)))


def test_successes_are_json(person: Client, tmp_path: Path) -> None:
    """The reading commands on real objects, and the conveniences."""
    workspace_id = person.get_me().workspace_id
    assert workspace_id is not None
    backup = person.create_backup(workspace_id, "nightly", "manual")
    person.update_backup(backup.id, retention=Retention("P30D"))
    artifact = upload_run(person, str(backup.id), b"hello")
    run = str(person.list_runs(backup.id).data[0].id)
    for argv in [
        ["whoami"],
        ["auth", "status"],
        ["workspace", "list"],
        ["backup", "list"],
        ["backup", "show", "nightly"],
        ["backup", "show", str(backup.id)[:8]],
        ["run", "list", "nightly"],
        ["run", "show", run[:8]],
        ["run", "wait", run],
        ["run", "watch", run[:6]],
        ["artifact", "list"],
        ["retention", "show", "nightly"],
        ["api", "GET", "/v1/workspaces/{workspace}/backups"],
        ["key", "create", "--out", str(tmp_path / "id.txt")],
    ]:
        check_exit_and_json(strongroom(*argv, "--json"))
    pulled = strongroom("artifact", "pull", str(artifact)[:8], "-o", str(tmp_path), "--json")
    assert check_exit_and_json(pulled)["size"] == 5


def test_refusals_read_plainly(person: Client, tmp_path: Path) -> None:
    """An unknown backup name exits 1; `api` prints the API's envelope and exits 1; a
    file artifact is not restored as an archive; completion prints click's script."""
    unknown = strongroom("backup", "show", "no-such-backup")
    assert unknown.exit_code == 1
    assert unknown.stderr.startswith("strongroom: error: no backup named")
    answer = strongroom("api", "GET", f"/v1/backups/{UNKNOWN}")
    assert answer.exit_code == 1
    assert json.loads(answer.stdout)["error"]["code"] == "not_found"
    workspace_id = person.get_me().workspace_id
    assert workspace_id is not None
    backup = person.create_backup(workspace_id, "files", "manual")
    person.update_backup(backup.id, retention=Retention("P30D"))
    artifact = upload_run(person, str(backup.id), b"plain", name="notes.txt")
    restored = strongroom("restore", str(artifact), "--to", str(tmp_path / "out"))
    assert restored.exit_code == 1
    assert "is not a directory archive" in restored.stderr
    script = strongroom("completion", "bash")
    assert script.exit_code == 0
    assert "_STRONGROOM_COMPLETE" in script.stdout


def test_server_commands_are_json(tmp_path: Path, config_home: Path) -> None:
    """The operator's commands on a data directory: what they did, as JSON; a refusal of
    the service (an unknown workspace) is the envelope and exit 1."""
    data = ["--data-dir", str(tmp_path / "data"), "--json"]
    applied = check_exit_and_json(strongroom("migrate", *data))
    assert "initial" in applied["applied"]
    assert check_exit_and_json(strongroom("migrate", *data))["applied"] == []
    added = strongroom("admin", "user-add", "ops@example.com", "--password-stdin", *data,
                       stdin="correct-horse-battery\n")  # fmt: skip
    assert check_exit_and_json(added)["email"] == "ops@example.com"
    assert check_exit_and_json(strongroom("retention", "run", *data))["failed"] == 0
    refused = check_exit_and_json(strongroom("admin", "billing", UNKNOWN, "active", *data))
    assert refused["error"]["code"] == "not_found"
    script = check_exit_and_json(strongroom("completion", "zsh", "--json"))
    assert script["shell"] == "zsh"
    assert "_STRONGROOM_COMPLETE" in script["script"]


def test_serve_says_where_it_listens_as_json_then_stops_cleanly(tmp_path: Path) -> None:
    """``serve --json``: one JSON line on standard output (the logs go to standard error);
    SIGTERM ends it with 0. A port in use is refused before that line, as the envelope."""
    port = free_port()
    command = [str(STRONGROOM), "serve", "--port", str(port), "--data-dir", str(tmp_path), "--json"]
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=unconfigured_environment()
    )
    try:
        assert server.stdout is not None
        said = json.loads(server.stdout.readline())
        assert said["listening"] == f"http://127.0.0.1:{port}"
        taken = subprocess.run(
            command,
            check=False,
            capture_output=True,
            text=True,
            env=unconfigured_environment(),
            timeout=60,
        )
        assert taken.returncode == 1
        refusal = json.loads(taken.stdout)["error"]
        assert refusal["code"] == "startup_failed"
        assert f"cannot listen on 127.0.0.1:{port}" in refusal["message"]
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        assert server.stdout is not None
        assert server.stdout.read() == b""
        server.stdout.close()


def test_a_server_without_its_database_says_so_in_one_line_before_listening(
    tmp_path: Path,
) -> None:
    """No "listening", one ``strongroom: error:`` line naming the cause, exit 1."""
    done = subprocess.run(
        [str(STRONGROOM), "serve", "--port", str(free_port()), "--data-dir", str(tmp_path),
         "--database-url", "postgresql://postgres@127.0.0.1:5432/strongroom_absent_db"],
        check=False, capture_output=True, text=True, env=unconfigured_environment(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if line.startswith("strongroom: ")]
    assert errors == [
        "strongroom: error: cannot start: connection failed: connection to server at "
        '"127.0.0.1", port 5432 failed: FATAL:  database "strongroom_absent_db" does not exist'
    ]


def test_a_server_without_its_object_storage_says_so_before_listening(tmp_path: Path) -> None:
    """An S3 store that does not answer: the envelope (``startup_failed``), exit 1."""
    store = {
        "STRONGROOM_S3_ENDPOINT": UNREACHABLE,
        "STRONGROOM_S3_ACCESS_KEY": "key",
        "STRONGROOM_S3_SECRET_KEY": "secret",
        "STRONGROOM_S3_BUCKET": "strongroom",
    }
    done = subprocess.run(
        [str(STRONGROOM), "serve", "--port", str(free_port()), "--data-dir", str(tmp_path),
         "--json"],
        check=False, capture_output=True, text=True, env={**unconfigured_environment(), **store},
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    refusal = json.loads(done.stdout)["error"]
    assert refusal["code"] == "startup_failed"
    assert refusal["message"].startswith("cannot start: object storage failed")
