"""Snapshot backups through the command line, end to end over real sockets (contract 14):
``strongroom push`` of a directory into a snapshot backup, a change, a second push that
uploads only what changed; ``snapshots``, ``ls``, ``diff``; ``restore`` of each snapshot
bit for bit (content, modes, mtimes, symlinks, hard links, xattrs, empty directories);
a partial restore that downloads a small part of the data; ``check --read-data`` finding a
flipped byte in storage and naming the files it affects; the agent's snapshot runs with a
write-only worker; ``forget``.

The server is ``strongroom serve`` as a process, on SQLite and local disk, and on
PostgreSQL and SeaweedFS.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from cloud_sources import minio_of
from integration_world import expect, on_postgres_and_seaweed, workspace_admin
from live_server import client_for

from support.postgres import PostgresServer
from support.seaweed import SeaweedServer
from support.serve_process import free_port, serving
from support.trees import MIB, every_kind_tree, snapshot
from support.world import bearer

COMMAND = [str(Path(sys.executable).with_name("strongroom"))]


@attrs.frozen
class Stack:
    url: str
    workspace_id: str
    token: str
    # Every stored object (not the database): name -> its bytes.
    objects: Callable[[], Iterator[tuple[str, bytes]]]
    # Replace the stored object whose name holds this artifact id.
    rewrite: Callable[[str, bytes], None]


def _local_objects(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    for path in data_dir.rglob("*"):
        if path.is_file() and path.suffix not in {".db", ".sqlite", ".db-wal", ".db-shm"}:
            yield str(path), path.read_bytes()


def _local_rewrite(data_dir: Path, artifact_id: str, data: bytes) -> None:
    (found,) = [
        p
        for p in data_dir.rglob("*")
        if p.is_file() and artifact_id in str(p) and p.stat().st_size == len(data)
    ]
    found.write_bytes(data)


@pytest.fixture(params=["sqlite-local", "postgres-seaweedfs"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    configuration = {"STRONGROOM_SIGNUP": "true", "STRONGROOM_LOG_FORMAT": "text"}
    email = f"ada-{secrets.token_hex(4)}@example.com"
    if request.param == "sqlite-local":
        with serving(data_dir, free_port(), tmp_path / "serve.log", configuration) as url:
            with client_for(url) as client:
                workspace, token = workspace_admin(client, email)
            yield Stack(
                url,
                workspace["id"],
                token,
                lambda: _local_objects(data_dir),
                lambda artifact_id, data: _local_rewrite(data_dir, artifact_id, data),
            )
        return
    pg_server: PostgresServer = request.getfixturevalue("pg_server")
    seaweed: SeaweedServer = request.getfixturevalue("seaweed")
    bucket = "strongroom-" + secrets.token_hex(6)
    root = minio_of(seaweed)

    def objects() -> Iterator[tuple[str, bytes]]:
        for item in root.list_objects(bucket, recursive=True, include_version=True):
            response = root.get_object(bucket, item.object_name, version_id=item.version_id)
            try:
                yield f"{item.object_name}@{item.version_id}", response.read()
            finally:
                response.close()
                response.release_conn()

    def rewrite(artifact_id: str, data: bytes) -> None:
        (name,) = {
            item.object_name
            for item in root.list_objects(bucket, recursive=True)
            if artifact_id in item.object_name
        }
        # A new version of the object: what a download is served (no lock pins an older one).
        root.put_object(bucket, name, io.BytesIO(data), len(data))

    with on_postgres_and_seaweed(pg_server, seaweed, bucket, "strongroom_snapcli") as stored_in:
        configuration |= stored_in
        with serving(data_dir, free_port(), tmp_path / "serve.log", configuration) as url:
            with client_for(url) as client:
                workspace, token = workspace_admin(client, email)
            yield Stack(url, workspace["id"], token, objects, rewrite)


def call(stack: Stack, method: str, path: str, status: int, **options: Any) -> Any:
    with client_for(stack.url) as client:
        response = client.request(method, path, headers=bearer(stack.token), **options)
    return expect(response, status) if response.status_code != 204 else None


@attrs.frozen
class Machine:
    home: Path
    stack: Stack

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
        env.update(
            HOME=str(self.home),
            XDG_STATE_HOME=str(self.home / "state"),
            XDG_CACHE_HOME=str(self.home / "cache"),
            XDG_CONFIG_HOME=str(self.home / "config"),
            NO_PROXY="*",
            STRONGROOM_SERVER=self.stack.url,
            STRONGROOM_TOKEN=self.stack.token,
            STRONGROOM_WORKSPACE=self.stack.workspace_id,
        )
        return env

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*COMMAND, *args],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)


def change_tree(root: Path) -> None:
    with (root / "big.bin").open("r+b") as big:  # an edit in the middle
        big.seek(16 * MIB)
        big.write(b"changed in the middle")
    (root / "docs" / "note-05.txt").unlink()
    (root / "docs" / "new.txt").write_text("marker-new " * 100)
    with (root / "docs" / "note-06.txt").open("a") as note:
        note.write("appended")


def xattrs_of(root: Path) -> dict[str, dict[str, bytes]]:
    """The extended attributes of every file and directory under ``root`` that has some."""
    found = {}
    for directory, subdirs, files in os.walk(root):
        for name in [*subdirs, *files]:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue
            values = {k: os.getxattr(path, k) for k in os.listxattr(path)}
            if values:
                found[os.path.relpath(path, root)] = values
    return found


def same_tree(restored: Path, source: Path, excluded: str | None = None) -> None:
    left, right = snapshot(restored), snapshot(source)
    right["entries"].pop(excluded, None)
    assert left == right
    assert xattrs_of(restored) == xattrs_of(source)


def new_snapshot_backup(stack: Stack, machine: Machine, kind: str = "manual") -> str:
    created = machine.json("backup", "create", f"files-{secrets.token_hex(3)}", "--kind", kind)
    assert created["format"] == "snapshot"
    assert len(created["encryption"]["recipients"]) == 1
    patch: dict[str, Any] = {"retention": {"expire_after": "P30D", "lock_for": "PT0S"}}
    return str(created["id"]), patch  # type: ignore[return-value]


def activate(stack: Stack, backup_id: str, patch: dict[str, Any]) -> None:
    patched = call(stack, "PATCH", f"/v1/backups/{backup_id}", 200, json=patch)
    assert patched["state"] == "active", patched


def test_push_list_diff_restore_check_and_forget(stack: Stack, tmp_path: Path) -> None:
    machine = Machine(tmp_path / "home", stack)
    machine.home.mkdir()
    key = machine.json("key", "create")
    assert key["recipient"].startswith("age1")
    assert (Path(key["path"]).stat().st_mode & 0o777) == 0o600
    backup_id, patch = new_snapshot_backup(stack, machine)
    activate(stack, backup_id, patch)
    tree = tmp_path / "tree"
    every_kind_tree(tree)
    before, before_xattrs = snapshot(tree), xattrs_of(tree)
    assert before_xattrs, "the tree carries an extended attribute"

    first = machine.json("push", backup_id, str(tree), "--exclude", "*.tmp")
    assert first["files"] >= 45
    change_tree(tree)
    second = machine.json("push", backup_id, str(tree))
    assert second["files_unchanged"] >= 35
    # An edit in the middle of a 32 MiB file re-uploads the chunks around it (at most two
    # of 4 MiB), not the 16 MiB after it.
    assert second["bytes_uploaded"] < 9 * MIB, second

    listed = machine.json("snapshots", backup_id)
    assert [s["id"] for s in listed] == [second["run_id"], first["run_id"]]

    names = {e["path"]: e for e in machine.json("ls", first["run_id"])}
    assert names["relative-link"]["kind"] == "symlink"
    assert names["hard-link.txt"]["kind"] in {"hardlink", "file"}
    assert names["run.sh"]["mode"] == "0750"
    changes = {
        c["path"]: c["change"] for c in machine.json("diff", first["run_id"], second["run_id"])
    }
    assert changes["docs/note-05.txt"] == "removed"
    assert changes["docs/new.txt"] == "added"
    assert changes["big.bin"] == "modified"

    # Each snapshot restores bit for bit, by run id or by any artifact id of its run.
    first_restore = tmp_path / "first"
    machine.run("restore", first["run_id"], "--to", str(first_restore))
    restored = snapshot(first_restore)
    assert restored["entries"] == {k: v for k, v in before["entries"].items() if k != "."} | {
        ".": restored["entries"]["."]
    }
    assert restored["hard_links"] == before["hard_links"]
    assert xattrs_of(first_restore) == before_xattrs
    artifacts = call(stack, "GET", f"/v1/workspaces/{stack.workspace_id}/artifacts", 200)["data"]
    manifest_id = next(
        a["id"] for a in artifacts if a["run_id"] == second["run_id"] and a["name"] == "manifest"
    )
    second_restore = tmp_path / "second"
    machine.run("restore", manifest_id, "--to", str(second_restore))
    same_tree(second_restore, tree)

    # A partial restore fetches the byte ranges of one 1 MiB file, not the 33 MiB of data.
    partial = machine.json(
        "restore", second["run_id"], "--to", str(tmp_path / "partial"), "--include", "one.bin"
    )
    assert (tmp_path / "partial" / "one.bin").read_bytes() == (tree / "one.bin").read_bytes()
    assert not (tmp_path / "partial" / "big.bin").exists()
    assert partial["bytes_downloaded"] < 2 * MIB, partial

    # check --read-data finds a byte flipped in storage and names the files it affects.
    assert machine.json("check", second["run_id"], "--read-data")["ok"] is True
    packs = [
        a for a in artifacts if a["run_id"] == first["run_id"] and a["name"].startswith("pack-")
    ]
    biggest = max(packs, key=lambda a: a["size"])
    (data,) = {
        data
        for name, data in stack.objects()
        if biggest["id"] in name and len(data) == biggest["size"]
    }
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0xFF
    stack.rewrite(biggest["id"], bytes(flipped))
    # The first snapshot uses every chunk of its packs (the second no longer uses the
    # middle of big.bin, where the byte may land).
    damaged = machine.run("check", first["run_id"], "--read-data", "--json", ok=False)
    assert damaged.returncode == 1
    report = json.loads(damaged.stdout)
    assert report["ok"] is False
    assert report["damaged_files"], report
    assert set(report["damaged_files"]) <= {e["path"] for e in names.values()}

    # forget deletes what can be deleted and says why the rest is kept.
    forgot = machine.run("forget", first["run_id"], "--json", ok=False)
    result = json.loads(forgot.stdout)
    assert result["deleted"] or result["kept"]
    for kept in result["kept"]:
        assert kept["code"]
        assert kept["reason"]


def test_no_stored_object_holds_plaintext(stack: Stack, tmp_path: Path) -> None:
    machine = Machine(tmp_path / "home", stack)
    machine.home.mkdir()
    backup_id, patch = new_snapshot_backup(stack, machine)
    activate(stack, backup_id, patch)
    tree = tmp_path / "tree"
    every_kind_tree(tree)
    machine.json("push", backup_id, str(tree))
    stored = list(stack.objects())
    assert len(stored) >= 4  # packs, index, manifest, sealed key
    for name, content in stored:
        assert b"marker-" not in content, name
        assert "ünïcode".encode() not in content, name


def test_the_agent_backs_up_snapshots_with_a_write_only_worker(
    stack: Stack, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "home", stack)
    machine.home.mkdir()
    worker = call(stack, "POST", "/v1/workers", 201, json={"name": "host"})
    created = machine.run(
        "backup", "create", f"files-{secrets.token_hex(3)}", "--kind", "local", "--json"
    )
    backup = json.loads(created.stdout)
    lines = created.stderr[created.stderr.index("[[backups]]") :]
    assert "repository_key = " in lines
    assert "AGE-SECRET-KEY" not in lines
    activate(
        stack,
        backup["id"],
        {"retention": {"expire_after": "P30D", "lock_for": "PT0S"}, "worker_id": worker["id"]},
    )
    tree = tmp_path / "tree"
    every_kind_tree(tree)
    token_file = machine.home / "worker.token"
    token_file.write_text(worker["token"])
    token_file.chmod(0o600)
    config = machine.home / "agent.toml"
    config.write_text(
        f'server = "{stack.url}"\ntoken_file = "{token_file}"\n'
        f'state_dir = "{machine.home / "agent"}"\nwait_seconds = 0\n'
        + lines.replace("/path/to/directory", str(tree))
        + 'exclude = ["*.tmp"]\n'
    )
    (tree / "skip.tmp").write_text("excluded")
    runs = []
    for _ in range(2):
        run = call(stack, "POST", f"/v1/backups/{backup['id']}/trigger", 202)
        machine.run("agent", "--config", str(config), "--once")
        done = call(stack, "GET", f"/v1/runs/{run['id']}", 200)
        assert done["state"] == "succeeded", done
        runs.append(done)
        if len(runs) == 1:
            change_tree(tree)
    assert runs[1]["bytes"] < runs[0]["bytes"] / 2
    target = tmp_path / "restored"
    machine.run("restore", runs[1]["id"], "--to", str(target))
    assert not (target / "skip.tmp").exists()
    same_tree(target, tree, excluded="skip.tmp")
