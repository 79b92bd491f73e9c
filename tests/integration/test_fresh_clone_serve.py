"""Issue 31's acceptance, as a new user meets it: a fresh clone, ``./scripts/serve`` (which
installs what the server runs into the clone's own ``.venv``), no other install step, the
server on PostgreSQL with its storage on SeaweedFS; then, with the clone's own
``strongroom`` command alone, a cloud backup of an S3 bucket, a run, and a restore of its
artifact into a new bucket, compared object for object.

The clone is of this repository's committed HEAD. The first start installs every
dependency into a new virtual environment: minutes, hence ``slow``.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cloud_sources import minio_of
from integration_world import SECRET_KEY, postgres_url

from strongroom.client import Client
from support.client_people import admin_in_new_workspace
from support.postgres import PostgresServer, scratch_database
from support.seaweed import SeaweedServer
from support.serve_process import free_port, unconfigured_environment

ROOT = Path(__file__).resolve().parents[2]
INSTALL_AND_START = 900.0  # a fresh virtual environment on a shared, loaded machine
RUN_TIMEOUT = "300"

pytestmark = pytest.mark.slow


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """``git clone`` of this repository: nothing installed, no ``.venv``."""
    target = tmp_path / "strongroom"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True)
    assert not (target / ".venv").exists()
    return target


@pytest.fixture
def served(
    clone: Path, pg_server: PostgresServer, seaweed: SeaweedServer, tmp_path: Path
) -> Iterator[str]:
    """``./scripts/serve`` of the clone on a new PostgreSQL database (migrated by serve
    itself) and a bucket of its own; its URL."""
    with scratch_database(pg_server, prefix="strongroom_clone") as conninfo:
        port = free_port()
        environment = {
            **{k: v for k, v in unconfigured_environment().items() if k != "VIRTUAL_ENV"},
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
            "STRONGROOM_SIGNUP": "true",  # on a database URL sign-up is off unless said
            "STRONGROOM_S3_ENDPOINT": seaweed.endpoint,
            "STRONGROOM_S3_ACCESS_KEY": seaweed.access_key,
            "STRONGROOM_S3_SECRET_KEY": seaweed.secret_key,
            "STRONGROOM_S3_BUCKET": "clone-" + secrets.token_hex(5),
            "STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8",  # the source is on loopback
            "STRONGROOM_RESTORE_POLL": "0.2",
        }
        log = tmp_path / "serve.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                ["./scripts/serve", "--port", str(port), "--data-dir", str(tmp_path / "data")],
                cwd=clone,
                env=environment,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for(process, url, log)
            yield url
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, log.read_text()[-4000:]


def _wait_for(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + INSTALL_AND_START
    with httpx2.Client(base_url=url, trust_env=False) as client:
        while True:
            assert process.poll() is None, f"./scripts/serve exited:\n{log.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"not up:\n{log.read_text()[-4000:]}"
            try:
                if client.get("/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            time.sleep(0.5)


class CloneCli:
    """The clone's own ``strongroom`` executable, signed in through its credentials file."""

    def __init__(self, clone: Path, home: Path) -> None:
        self.executable = clone / ".venv" / "bin" / "strongroom"
        self.environment = {**unconfigured_environment(), "XDG_CONFIG_HOME": str(home)}

    def __call__(self, *argv: str, stdin: str | None = None) -> Any:
        done = subprocess.run(
            [str(self.executable), *argv, "--json"],
            check=False,
            input=stdin,
            capture_output=True,
            text=True,
            env=self.environment,
            timeout=600,
        )
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        return json.loads(done.stdout)


def test_a_fresh_clone_serves_postgres_and_s3_and_backs_up_and_restores_a_bucket(
    served: str, clone: Path, seaweed: SeaweedServer, tmp_path: Path
) -> None:
    storage = minio_of(seaweed)
    source, target = "src-" + secrets.token_hex(4), "dst-" + secrets.token_hex(4)
    storage.make_bucket(source)
    objects = {f"dir/{i}.bin": os.urandom(100 + i * 1000) for i in range(5)}
    objects["été/ファイル.txt"] = "unicode ✓".encode()
    for key, content in objects.items():
        storage.put_object(source, key, io.BytesIO(content), len(content))
    with Client(served) as anonymous:
        admin = admin_in_new_workspace(anonymous, "clone@example.com")
        workspace_id = admin.get_me().workspace_id
    credentials = tmp_path / "config" / "strongroom" / "credentials.json"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(
        json.dumps({"server": served, "token": admin.token, "workspace_id": str(workspace_id)})
    )
    credentials.chmod(0o600)
    cli = CloneCli(clone, tmp_path / "config")
    keys = json.dumps(
        {"access_key_id": seaweed.access_key, "secret_access_key": seaweed.secret_key}
    )
    bucket = {"type": "s3", "endpoint": seaweed.endpoint}

    cli("backup", "create", "objects", "--kind", "cloud")
    backup = cli(
        "backup", "set", "objects", "--source", json.dumps({**bucket, "bucket": source}),
        "--credentials-stdin", "--expire-after", "P30D", "--lock-for", "PT0S", stdin=keys,
    )  # fmt: skip
    assert backup["state"] == "active"
    run = cli("backup", "trigger", "objects")
    finished = cli("run", "wait", run["id"][:8], "--timeout", RUN_TIMEOUT, "--interval", "0.5")
    assert finished["state"] == "succeeded", finished
    (artifact,) = cli("artifact", "list", "--backup", "objects")
    restore = cli(
        "restore-job", "create", artifact["id"][:8],
        "--target", json.dumps({**bucket, "bucket": target}), "--credentials-stdin", stdin=keys,
    )  # fmt: skip
    ended = cli("restore-job", "wait", restore["id"], "--timeout", RUN_TIMEOUT, "--interval", "0.5")
    assert ended["state"] == "succeeded", ended

    restored = {
        item.object_name: storage.get_object(target, item.object_name).read()
        for item in storage.list_objects(target, recursive=True)
    }
    assert restored == objects
