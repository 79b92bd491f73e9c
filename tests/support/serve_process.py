"""``strongroom serve`` as a real process, as ``./scripts/serve`` runs it: the console
script of this environment with ``--port`` and ``--data-dir`` and no ``STRONGROOM_*``
variable (the embedded default, SQLite under the data dir)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path

import httpx2

STRONGROOM = Path(sys.executable).with_name("strongroom")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def unconfigured_environment() -> dict[str, str]:
    """This process's environment without any Strongroom configuration."""
    return {name: value for name, value in os.environ.items() if not name.startswith("STRONGROOM_")}


def start_serve(
    data_dir: Path, port: int, log: Path, configuration: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``strongroom serve --port PORT --data-dir DATA_DIR`` with only the ``STRONGROOM_*``
    variables of ``configuration``, its output appended to ``log``."""
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(STRONGROOM), "serve", "--port", str(port), "--data-dir", str(data_dir)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**unconfigured_environment(), **(configuration or {})},
            cwd=data_dir.parent,
        )


def wait_until_up(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Until ``/healthz`` answers; fails with the server's output if it exits first."""
    deadline = time.monotonic() + START_TIMEOUT
    with httpx2.Client(base_url=url, trust_env=False) as client:
        while True:
            assert process.poll() is None, f"strongroom serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, (
                f"strongroom serve did not start:\n{log.read_text()}"
            )
            try:
                if client.get("/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            time.sleep(0.05)


@contextmanager
def serving(
    data_dir: Path, port: int, log: Path, configuration: Mapping[str, str] | None = None
) -> Iterator[str]:
    """The server (configured as ``start_serve`` says) until SIGTERM, which must stop it
    cleanly; its URL."""
    url = f"http://127.0.0.1:{port}"
    logged_before = log.stat().st_size if log.exists() else 0
    process = start_serve(data_dir, port, log, configuration)
    try:
        wait_until_up(process, url, log)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            returncode = process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    output_of_this_run = log.read_bytes()[logged_before:].decode()
    assert returncode == 0, output_of_this_run
    assert "Application shutdown complete." in output_of_this_run
