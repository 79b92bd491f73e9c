"""The client's transfers end to end over real sockets (contract 12): ``strongroom agent``
backs up a directory tree on ``trigger`` and on a schedule, ``strongroom restore`` brings
it back equal; ``strongroom push`` of a 300 MiB file killed half-way resumes with the
missing parts only; an agent killed mid-upload gets the run again after its lease
expires; a refused token stops the agent.

The server is ``strongroom serve`` as a process: on SQLite and local disk, and on
PostgreSQL and SeaweedFS. The commands run as processes too, with their own state and
cache directories. The tree holds thousands of small files and a large one: the
acceptance sizes (200 MiB in the tree, 300 MiB pushed) by default;
``STRONGROOM_SMALL=1`` makes them 50 and 64 MiB for a quick local run.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import pytest
from integration_world import expect, postgres_url, workspace_admin
from live_server import client_for

from support.seaweed import SeaweedServer
from support.serve_process import free_port, serving
from support.trees import restored_root, snapshot
from support.world import bearer

MIB = 1024 * 1024
QUICK = os.environ.get("STRONGROOM_SMALL") == "1"
BIG = (50 if QUICK else 200) * MIB
PUSHED = (64 if QUICK else 300) * MIB
SMALL_FILES = 2000
PART = 16 * MIB
SLOT_WAIT = 240.0  # a minute slot, a 1 s scheduler pass, the agent's upload, with room
COMMAND = [str(Path(sys.executable).with_name("strongroom"))]
LEASE_WAIT = 100.0  # a 60 s lease, noticed within the 1 s lease interval, with room


@attrs.frozen
class Stack:
    """A running server and a signed-in workspace administrator."""

    url: str
    workspace_id: str
    token: str
    log: Path

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)


def _configuration(extra: dict[str, str]) -> dict[str, str]:
    return {
        "STRONGROOM_SIGNUP": "true",
        "STRONGROOM_MULTIPART_THRESHOLD": str(MIB),
        "STRONGROOM_LEASE_INTERVAL": "1",
        "STRONGROOM_SCHEDULER_INTERVAL": "1",
        "STRONGROOM_VERIFY_PENDING_INTERVAL": "1",
        "STRONGROOM_LOG_FORMAT": "text",
        # A stop answers waiting claims at once; a killed agent's upload still in flight
        # should not hold it for long either.
        "STRONGROOM_SHUTDOWN_TIMEOUT": "3",
        **extra,
    }


@contextmanager
def _stack(tmp_path: Path, configuration: dict[str, str]) -> Iterator[Stack]:
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    data_dir.mkdir()
    with serving(data_dir, free_port(), log, _configuration(configuration)) as url:
        with client_for(url) as client:
            workspace, token = workspace_admin(client, f"ada-{secrets.token_hex(4)}@example.com")
        yield Stack(url, workspace["id"], token, log)


@pytest.fixture
def sqlite_stack(tmp_path: Path) -> Iterator[Stack]:
    """``strongroom serve`` on SQLite and local disk."""
    with _stack(tmp_path, {}) as stack:
        yield stack


@pytest.fixture(params=["sqlite", "postgres"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    """Each deployment in turn: SQLite + local disk, PostgreSQL + SeaweedFS."""
    if request.param == "sqlite":
        with _stack(tmp_path, {}) as stack:
            yield stack
        return
    seaweed: SeaweedServer = request.getfixturevalue("seaweed")
    conninfo: str = request.getfixturevalue("integration_conninfo")
    configuration = {
        "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
        "STRONGROOM_S3_ENDPOINT": seaweed.endpoint,
        "STRONGROOM_S3_ACCESS_KEY": seaweed.access_key,
        "STRONGROOM_S3_SECRET_KEY": seaweed.secret_key,
        "STRONGROOM_S3_BUCKET": "strongroom-" + secrets.token_hex(6),
        "STRONGROOM_SECRET_KEY": "client-transfers-secret-key-0123456789abcdef",
    }
    with _stack(tmp_path, configuration) as stack:
        yield stack


# --------------------------------------------------------------------------------------
# The API calls a person makes (plain HTTP: what the commands do is under test)


def call(stack: Stack, method: str, path: str, status: int, **options: Any) -> Any:
    with client_for(stack.url) as client:
        response = client.request(method, path, headers=stack.headers, **options)
    return expect(response, status) if response.status_code != 204 else None


def new_worker(stack: Stack) -> tuple[str, str]:
    """A worker of the workspace: its id and its ``bkw_`` token."""
    worker = call(stack, "POST", "/v1/workers", 201, json={"name": f"host-{secrets.token_hex(3)}"})
    return worker["id"], worker["token"]


def new_backup(stack: Stack, kind: str, worker_id: str | None = None) -> str:
    backup = call(
        stack,
        "POST",
        f"/v1/workspaces/{stack.workspace_id}/backups",
        201,
        json={"name": f"files-{secrets.token_hex(3)}", "kind": kind},
    )
    patch: dict[str, Any] = {"retention": {"expire_after": "P30D", "lock_for": "P1D"}}
    if worker_id is not None:
        patch["worker_id"] = worker_id
    patched = call(stack, "PATCH", f"/v1/backups/{backup['id']}", 200, json=patch)
    assert patched["state"] == "active", patched
    return str(backup["id"])


def trigger(stack: Stack, backup_id: str) -> str:
    run = call(stack, "POST", f"/v1/backups/{backup_id}/trigger", 202)
    return str(run["id"])


def run_of(stack: Stack, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = call(stack, "GET", f"/v1/runs/{run_id}", 200)
    return run


def runs_of(stack: Stack, backup_id: str) -> list[dict[str, Any]]:
    listing = call(stack, "GET", f"/v1/backups/{backup_id}/runs", 200)
    runs: list[dict[str, Any]] = listing["data"]
    return runs


def artifacts_of(stack: Stack, run_id: str) -> list[dict[str, Any]]:
    listing = call(stack, "GET", f"/v1/workspaces/{stack.workspace_id}/artifacts", 200)
    return [a for a in listing["data"] if a["run_id"] == run_id]


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# --------------------------------------------------------------------------------------
# The commands


@attrs.frozen
class Machine:
    """The customer's machine: its home (state and cache directories) and environment."""

    home: Path
    stack: Stack

    def env(self, signed_in: bool = True) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
        env.update(
            HOME=str(self.home),
            XDG_STATE_HOME=str(self.home / "state"),
            XDG_CACHE_HOME=str(self.home / "cache"),
            XDG_CONFIG_HOME=str(self.home / "config"),
            NO_PROXY="*",
        )
        if signed_in:
            env.update(STRONGROOM_SERVER=self.stack.url, STRONGROOM_TOKEN=self.stack.token)
        return env

    def start(self, *args: str, signed_in: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*COMMAND, *args],
            env=self.env(signed_in),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(
        self, *args: str, timeout: float = 300, signed_in: bool = True
    ) -> subprocess.CompletedProcess[str]:
        process = self.start(*args, signed_in=signed_in)
        stdout, stderr = process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def agent_config(
        self, worker_token: str, backup_id: str, paths: list[Path], wait_seconds: int = 0
    ) -> Path:
        config = self.home / "agent.toml"
        token_file = self.home / "worker.token"
        token_file.write_text(worker_token + "\n")
        token_file.chmod(0o600)
        config.write_text(
            f'server = "{self.stack.url}"\n'
            f'token_file = "{token_file}"\n'
            f'state_dir = "{self.home / "agent"}"\n'
            "heartbeat_seconds = 1\n"
            f"wait_seconds = {wait_seconds}\n"
            f'[[backups]]\nid = "{backup_id}"\npaths = {json.dumps([str(p) for p in paths])}\n'
        )
        return config


def machine_for(stack: Stack, tmp_path: Path) -> Machine:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return Machine(home, stack)


def write_random(path: Path, size: int) -> None:
    with path.open("wb") as output:
        left = size
        while left:
            chunk = min(MIB, left)
            output.write(os.urandom(chunk))
            left -= chunk


def make_tree(root: Path, big: int = BIG) -> Path:
    """A tree with thousands of small files, a large one, symlinks (relative, absolute,
    dangling), a hard link, empty directories, modes, nanosecond mtimes, unicode names."""
    rng = secrets.SystemRandom()
    root.mkdir()
    docs = root / "docs"
    for index in range(SMALL_FILES):
        folder = docs / f"d{index % 40:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{index:04d}.txt"
        path.write_bytes(os.urandom(rng.randrange(0, 2048)))
        os.chmod(path, rng.choice([0o644, 0o600, 0o640, 0o755, 0o444]))
        stamp = rng.randrange(10**18, 2 * 10**18)
        os.utime(path, ns=(stamp, stamp))
    write_random(root / "big.bin", big)
    (root / "naïve café").mkdir()
    (root / "naïve café" / "日本語 🎉.txt").write_text("こんにちは")
    (root / "empty").mkdir()
    (root / "nested" / "empty" / "deeper").mkdir(parents=True)
    (root / "script.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "script.sh", 0o750)
    (root / "ro").mkdir()
    (root / "ro" / "inside").write_text("read only dir")
    os.symlink("docs/d00/f0000.txt", root / "link-relative")
    os.symlink("/etc/hostname", root / "link-absolute")
    os.symlink("nowhere/at/all", root / "link-dangling")
    os.symlink("docs", root / "link-to-dir")
    os.link(docs / "d01" / "f0001.txt", root / "hard-link")
    for directory in sorted(
        (p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()),
        key=lambda p: len(p.parts),
        reverse=True,
    ):
        stamp = rng.randrange(10**18, 2 * 10**18)
        os.utime(directory, ns=(stamp, stamp))
    os.chmod(root / "ro", 0o555)
    os.utime(root, ns=(1_700_000_000_123_456_789,) * 2)
    return root


def restore_and_compare(machine: Machine, artifact_id: str, source: Path, target: Path) -> None:
    restored = machine.run("restore", artifact_id, "--to", str(target), "--json")
    assert restored.returncode == 0, restored.stderr
    report = json.loads(restored.stdout)
    assert report["files"] >= SMALL_FILES
    assert snapshot(restored_root(target, source)) == snapshot(source)


# --------------------------------------------------------------------------------------


class TestAgentBacksUpAndRestoreBringsBack:
    """The whole path of a local backup."""

    def test_trigger_and_schedule_agent_restore_give_the_same_tree(
        self, stack: Stack, tmp_path: Path
    ) -> None:
        """Trigger, ``agent --once``: the run succeeds with one archive. Then a schedule of
        every minute and a long-lived agent: the scheduler queues the slot's run
        (``trigger: "schedule"``), the agent claims and uploads it, SIGTERM stops it.
        ``restore`` of either archive gives back content, modes, mtimes, links and empty
        directories."""
        machine = machine_for(stack, tmp_path)
        source = make_tree(tmp_path / "source")
        worker_id, worker_token = new_worker(stack)
        backup_id = new_backup(stack, "local", worker_id)
        run_id = trigger(stack, backup_id)
        config = machine.agent_config(worker_token, backup_id, [source])
        started = time.monotonic()
        agent = machine.run("agent", "--config", str(config), "--once")
        elapsed = time.monotonic() - started
        assert agent.returncode == 0, agent.stderr
        run = run_of(stack, run_id)
        assert (run["state"], run["trigger"]) == ("succeeded", "api"), (run, agent.stderr)
        assert run["worker_id"] == worker_id
        (artifact,) = artifacts_of(stack, run_id)
        assert artifact["name"].endswith(".tar.zst")
        assert artifact["size"] > BIG
        print(f"agent on trigger: {elapsed:.1f} s for {artifact['size']} bytes")

        # The schedule's first slot is at most a minute away; the agent waits for it in
        # its long poll while the triggered archive is restored and compared.
        schedule = {"cron": "* * * * *", "timezone": "UTC"}
        call(stack, "PATCH", f"/v1/backups/{backup_id}", 200, json={"schedule": schedule})
        config = machine.agent_config(worker_token, backup_id, [source], wait_seconds=5)
        started = time.monotonic()
        long_lived = machine.start("agent", "--config", str(config))
        try:
            restore_and_compare(machine, artifact["id"], source, tmp_path / "restored")

            def scheduled() -> list[dict[str, Any]]:
                return [r for r in runs_of(stack, backup_id) if r["trigger"] == "schedule"]

            wait_for(
                lambda: (
                    any(r["state"] not in ("queued", "running") for r in scheduled())
                    or long_lived.poll() is not None
                ),
                SLOT_WAIT,
                "the scheduled run",
            )
            print(f"slot run done {time.monotonic() - started:.1f} s after the schedule was set")
        finally:
            long_lived.send_signal(signal.SIGTERM)
            _, stderr = long_lived.communicate(timeout=60)
        assert long_lived.returncode == 0, stderr
        (slot_run, *_) = scheduled()
        assert (slot_run["state"], slot_run["worker_id"]) == ("succeeded", worker_id), (
            slot_run,
            stderr,
        )
        (slot_artifact,) = artifacts_of(stack, slot_run["id"])
        assert slot_artifact["id"] != artifact["id"]
        restore_and_compare(machine, slot_artifact["id"], source, tmp_path / "restored-slot")

    def test_restore_refuses_a_busy_target_and_other_bytes(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        """A non-empty target: exit 1, nothing touched; an unknown artifact: exit 1."""
        machine = machine_for(sqlite_stack, tmp_path)
        source = tmp_path / "small"
        source.mkdir()
        (source / "a").write_text("alpha")
        backup_id = new_backup(sqlite_stack, "manual")
        pushed = machine.run("push", backup_id, str(source), "--json")
        assert pushed.returncode == 0, pushed.stderr
        artifact_id = json.loads(pushed.stdout)["artifacts"][0]["artifact_id"]
        busy = tmp_path / "busy"
        busy.mkdir()
        (busy / "mine").write_text("keep")
        refused = machine.run("restore", artifact_id, "--to", str(busy))
        assert refused.returncode == 1
        assert "not an empty directory" in refused.stderr
        assert (busy / "mine").read_text() == "keep"
        unknown = machine.run(
            "restore", "00000000-0000-4000-8000-000000000000", "--to", str(tmp_path / "x")
        )
        assert unknown.returncode == 1
        assert "no artifact" in unknown.stderr
        assert not (tmp_path / "x").exists()


class TestPushResumes:
    """``push`` of a large file, killed half-way, sends only the missing parts."""

    def test_killed_push_resumes_with_the_missing_parts(self, stack: Stack, tmp_path: Path) -> None:
        """A 300 MiB file in 16 MiB parts, SIGKILL once about half the parts are stored;
        the same command again sends only the others, and the stored artifact's sha256
        is the file's."""
        machine = machine_for(stack, tmp_path)
        big = tmp_path / "big.bin"
        write_random(big, PUSHED)
        total = -(-PUSHED // PART)
        digest = hashlib.sha256()
        with big.open("rb") as data:
            while chunk := data.read(MIB):
                digest.update(chunk)
        backup_id = new_backup(stack, "manual")
        process = machine.start("push", backup_id, str(big), "--parallel", "1", "--json")
        state_dir = machine.home / "state" / "strongroom" / "push"

        def parts_done() -> int:
            for path in state_dir.glob("*.json"):
                try:
                    items = json.loads(path.read_text())["items"]
                except (OSError, ValueError):
                    return 0
                return len(items[0]["completed_parts"])
            return 0

        half = total // 2
        wait_for(lambda: parts_done() >= half or process.poll() is not None, 300, "half the parts")
        process.send_signal(signal.SIGKILL)
        process.communicate()
        stored_before = parts_done()
        assert process.returncode == -signal.SIGKILL
        assert half <= stored_before < total, "the push finished before it could be interrupted"

        resumed = machine.run("push", backup_id, str(big), "--parallel", "2", "--json")
        assert resumed.returncode == 0, resumed.stderr
        result = json.loads(resumed.stdout)
        (pushed,) = result["artifacts"]
        assert result["resumed"] is True
        assert result["state"] == "succeeded"
        assert pushed["parts_skipped"] >= stored_before
        assert pushed["parts_sent"] + pushed["parts_skipped"] == total
        assert pushed["parts_sent"] >= 1
        assert list(state_dir.glob("*.json")) == []
        run = run_of(stack, result["run_id"])
        assert run["artifact_count"] == 1
        assert run["bytes"] == PUSHED
        (stored,) = artifacts_of(stack, result["run_id"])
        assert (stored["size"], stored["sha256"]) == (PUSHED, digest.hexdigest())
        assert stored["state"] == "available"

        # The server re-reads what storage holds against that sha256 (at once on local
        # disk, in the background for an S3 multipart upload).
        def verification() -> str | None:
            (artifact,) = artifacts_of(stack, result["run_id"])
            found: str | None = artifact["verification"]
            return found

        wait_for(lambda: verification() not in (None, "pending"), 120, "the verification")
        assert verification() == "ok"
        print(f"push resumed: {pushed['parts_sent']} sent, {pushed['parts_skipped']} skipped")

    def test_a_backup_that_cannot_take_a_run_is_refused_before_reading(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        """A draft manual backup, a local backup, an unknown id, a paused backup: exit 1
        at once with the reason, though hashing the (sparse, 64 GiB) input would take
        minutes; no run is started."""
        stack = sqlite_stack
        machine = machine_for(stack, tmp_path)
        huge = tmp_path / "huge.img"
        with huge.open("wb") as sparse:
            sparse.truncate(64 * 1024 * MIB)
        draft = call(
            stack,
            "POST",
            f"/v1/workspaces/{stack.workspace_id}/backups",
            201,
            json={"name": "draft-dump", "kind": "manual"},
        )
        worker_id, _ = new_worker(stack)
        local = new_backup(stack, "local", worker_id)
        paused = new_backup(stack, "manual")
        call(stack, "POST", f"/v1/backups/{paused}/pause", 200)
        cases = {
            draft["id"]: "is a draft until its configuration is complete; missing: retention",
            local: "runs are started by the client only for manual backups",
            str(UUID(int=7)): "backup not found (not_found",
            paused: "is paused: resume it first",
        }
        for backup_id, reason in cases.items():
            started = time.monotonic()
            refused = machine.run("push", backup_id, str(huge), timeout=60)
            assert refused.returncode == 1, refused.stderr
            assert reason in refused.stderr
            assert time.monotonic() - started < 10
        for backup_id in (draft["id"], paused):
            assert runs_of(stack, backup_id) == []

    def test_stdin_and_files_in_one_run(self, sqlite_stack: Stack, tmp_path: Path) -> None:
        """``-`` reads standard input; two files with one base name get distinct names."""
        machine = machine_for(sqlite_stack, tmp_path)
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        (tmp_path / "a" / "notes.txt").write_text("one")
        (tmp_path / "b" / "notes.txt").write_text("two")
        backup_id = new_backup(sqlite_stack, "manual")
        process = subprocess.run(
            [
                *COMMAND,
                "push",
                backup_id,
                "-",
                str(tmp_path / "a" / "notes.txt"),
                str(tmp_path / "b" / "notes.txt"),
                "--name",
                "dump.sql",
                "--json",
            ],
            input=b"SELECT 1;\n",
            check=False,
            env=machine.env(),
            capture_output=True,
            timeout=120,
        )
        assert process.returncode == 0, process.stderr
        names = [a["name"] for a in json.loads(process.stdout)["artifacts"]]
        assert names == ["dump.sql", "notes.txt", "notes.txt (2)"]


class TestAgentFailures:
    """An agent that dies, a token the server refuses."""

    @pytest.mark.slow
    def test_an_agent_killed_mid_upload_gets_the_run_again_after_its_lease(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        """SIGKILL during the upload; the lease expires, the run is queued again
        (attempt 2), the next agent resumes with the spooled archive and succeeds."""
        stack = sqlite_stack
        machine = machine_for(stack, tmp_path)
        source = make_tree(tmp_path / "source", big=4 * PART)
        worker_id, worker_token = new_worker(stack)
        backup_id = new_backup(stack, "local", worker_id)
        run_id = trigger(stack, backup_id)
        config = machine.agent_config(worker_token, backup_id, [source])
        agent = machine.start("agent", "--config", str(config), "--once")
        state = machine.home / "agent" / "state" / f"{run_id}.json"
        wait_for(lambda: state.exists() or agent.poll() is not None, 120, "the upload")
        agent.send_signal(signal.SIGKILL)
        agent.communicate()
        assert agent.returncode == -signal.SIGKILL
        assert run_of(stack, run_id)["state"] == "running"

        wait_for(lambda: run_of(stack, run_id)["state"] == "queued", LEASE_WAIT, "the requeue")
        assert run_of(stack, run_id)["attempt"] == 2
        again = machine.run("agent", "--config", str(config), "--once")
        assert again.returncode == 0, again.stderr
        assert "resuming with the archive of an earlier attempt" in again.stderr
        run = run_of(stack, run_id)
        assert (run["state"], run["attempt"]) == ("succeeded", 2), again.stderr
        (artifact,) = artifacts_of(stack, run_id)
        restore_and_compare(machine, artifact["id"], source, tmp_path / "restored")

    def test_a_wrong_or_revoked_token_is_a_clear_error(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        """Exit 1 at once with a message naming the token; no retries."""
        machine = machine_for(sqlite_stack, tmp_path)
        worker_id, worker_token = new_worker(sqlite_stack)
        backup_id = new_backup(sqlite_stack, "local", worker_id)
        source = tmp_path / "src"
        source.mkdir()
        wrong = machine.agent_config("bkw_" + secrets.token_urlsafe(24), backup_id, [source])
        started = time.monotonic()
        refused = machine.run("agent", "--config", str(wrong))
        assert refused.returncode == 1, refused.stderr
        assert "refused this agent's token" in refused.stderr
        assert time.monotonic() - started < 20
        assert refused.stderr.count("refused this agent's token") == 1

        call(sqlite_stack, "POST", f"/v1/workers/{worker_id}/rotate", 200)
        revoked = machine.agent_config(worker_token, backup_id, [source])
        refused = machine.run("agent", "--config", str(revoked))
        assert refused.returncode == 1
        assert "refused this agent's token" in refused.stderr

    def test_a_backup_the_configuration_does_not_name_fails_its_run(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        machine = machine_for(sqlite_stack, tmp_path)
        worker_id, worker_token = new_worker(sqlite_stack)
        backup_id = new_backup(sqlite_stack, "local", worker_id)
        run_id = trigger(sqlite_stack, backup_id)
        other = "6f1c2a9e-0000-4000-8000-000000000001"
        config = machine.agent_config(worker_token, other, [tmp_path])
        answer = machine.run("agent", "--config", str(config), "--once")
        assert answer.returncode == 0, answer.stderr
        run = run_of(sqlite_stack, run_id)
        assert run["state"] == "failed"
        assert f"names no paths for backup {backup_id}" in run["error"]

    def test_a_bad_configuration_is_exit_2_and_help_shows_an_example(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        machine = machine_for(sqlite_stack, tmp_path)
        bad = tmp_path / "bad.toml"
        bad.write_text('server = "nope"\n')
        answer = machine.run("agent", "--config", str(bad))
        assert answer.returncode == 2
        assert "`server` must be" in answer.stderr
        helped = machine.run("agent", "--help")
        assert helped.returncode == 0
        assert "[[backups]]" in helped.stdout
        assert "token_file" in helped.stdout


class TestAgentStops:
    """Cancel and SIGTERM reach a run in progress (the agent is paused with SIGSTOP as
    soon as its upload starts, so the signal lands mid-upload)."""

    @staticmethod
    def paused_mid_upload(
        stack: Stack, tmp_path: Path, *args: str
    ) -> tuple[Machine, subprocess.Popen[str], str, Path]:
        machine = machine_for(stack, tmp_path)
        source = make_tree(tmp_path / "source", big=4 * PART)
        worker_id, worker_token = new_worker(stack)
        backup_id = new_backup(stack, "local", worker_id)
        run_id = trigger(stack, backup_id)
        config = machine.agent_config(worker_token, backup_id, [source])
        agent = machine.start("agent", "--config", str(config), *args)
        state = machine.home / "agent" / "state" / f"{run_id}.json"
        deadline = time.monotonic() + 120
        while not state.exists() and agent.poll() is None:
            assert time.monotonic() < deadline, "the upload did not start"
            time.sleep(0.005)
        agent.send_signal(signal.SIGSTOP)
        return machine, agent, run_id, source

    def test_a_cancel_requested_run_stops_and_ends_cancelled(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        _, agent, run_id, _ = self.paused_mid_upload(sqlite_stack, tmp_path, "--once")
        cancelled = call(sqlite_stack, "POST", f"/v1/runs/{run_id}/cancel", 200)
        assert cancelled["cancel_requested"] is True
        agent.send_signal(signal.SIGCONT)
        _, stderr = agent.communicate(timeout=120)
        assert agent.returncode == 0, stderr
        assert "cancel requested" in stderr
        run = run_of(sqlite_stack, run_id)
        assert run["state"] == "cancelled", stderr
        assert artifacts_of(sqlite_stack, run_id) == [] or all(
            a["state"] != "available" for a in artifacts_of(sqlite_stack, run_id)
        )

    def test_sigterm_stops_cleanly_and_leaves_the_run_to_its_lease(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        _, agent, run_id, _ = self.paused_mid_upload(sqlite_stack, tmp_path)
        agent.send_signal(signal.SIGTERM)
        agent.send_signal(signal.SIGCONT)
        _, stderr = agent.communicate(timeout=60)
        assert agent.returncode == 0, stderr
        assert "left to its lease" in stderr
        run = run_of(sqlite_stack, run_id)
        assert (run["state"], run["error"]) == ("running", None)
        assert run["lease_expires_at"] is not None

    def test_sigterm_ends_an_idle_long_poll_at_once(
        self, sqlite_stack: Stack, tmp_path: Path
    ) -> None:
        machine = machine_for(sqlite_stack, tmp_path)
        worker_id, worker_token = new_worker(sqlite_stack)
        backup_id = new_backup(sqlite_stack, "local", worker_id)
        config = machine.agent_config(worker_token, backup_id, [tmp_path])
        config.write_text(config.read_text().replace("wait_seconds = 0", "wait_seconds = 30"))
        agent = machine.start("agent", "--config", str(config))
        assert agent.stderr is not None
        assert "agent started" in agent.stderr.readline()
        time.sleep(0.5)  # in its long poll now
        assert agent.poll() is None
        started = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=30)
        assert agent.returncode == 0, stderr
        assert time.monotonic() - started < 5
        assert "stopped" in stderr


def test_once_with_an_unreachable_server_exits_1(tmp_path: Path) -> None:
    """Nothing listens at the configured server: ``--once`` says so and exits 1."""
    url = f"http://127.0.0.1:{free_port()}"
    machine = Machine(tmp_path, Stack(url, "", "", tmp_path / "none.log"))
    config = machine.agent_config("bkw_" + secrets.token_urlsafe(8), str(UUID(int=1)), [tmp_path])
    answer = machine.run("agent", "--config", str(config), "--once", signed_in=False, timeout=120)
    assert answer.returncode == 1, answer.stderr
    assert "claim failed" in answer.stderr
