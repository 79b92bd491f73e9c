"""A ``strongroom serve`` subprocess for integration tests: free ports, a clean
environment, waiting until it answers, and signing in over HTTP with the device flow."""

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
from typing import Any

import httpx2
from integration_world import expect
from live_server import client_for

from support.world import PASSWORD, bearer

STRONGROOM = Path(sys.executable).with_name("strongroom")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def unconfigured_environment() -> dict[str, str]:
    """This process's environment without any Strongroom configuration."""
    return {name: value for name, value in os.environ.items() if not name.startswith("STRONGROOM_")}


@contextmanager
def serving(
    data_dir: Path, port: int, log: Path, configuration: Mapping[str, str] | None = None
) -> Iterator[str]:
    """``strongroom serve --port PORT --data-dir DATA_DIR`` with only the ``STRONGROOM_*``
    variables of ``configuration``, until SIGTERM; its URL."""
    url = f"http://127.0.0.1:{port}"
    logged_before = log.stat().st_size if log.exists() else 0
    with log.open("ab") as output:
        process = subprocess.Popen(
            [str(STRONGROOM), "serve", "--port", str(port), "--data-dir", str(data_dir)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**unconfigured_environment(), **(configuration or {})},
            cwd=data_dir.parent,
        )
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
    # uvicorn shuts down gracefully, then re-raises the signal it caught (a clean stop for
    # a service manager); the lifespan's shutdown ran either way.
    output_of_this_run = log.read_bytes()[logged_before:].decode()
    assert returncode in (0, -signal.SIGTERM), output_of_this_run
    assert "Application shutdown complete." in output_of_this_run


def wait_until_up(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Until ``/healthz`` answers; fails with the server's output if it exits first."""
    deadline = time.monotonic() + START_TIMEOUT
    with client_for(url) as client:
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


def sign_up_and_in(client: httpx2.Client, email: str) -> str:
    """Sign up, then the device flow over HTTP, then ``POST /v1/auth/sessions``: a session."""
    signed_up = expect(
        client.post(
            "/idp/signup", data={"email": email, "password": PASSWORD, "name": "Ada"}, headers=FORM
        ),
        201,
    )
    assert signed_up["email"] == email
    config = expect(client.get("/v1/auth/cli/config"), 200)
    authorization = expect(
        client.post("/idp/device/code", data={"client_id": config["client_id"]}, headers=FORM),
        200,
    )
    approval = client.post(
        "/idp/device",
        data={
            "user_code": authorization["user_code"],
            "email": email,
            "password": PASSWORD,
            "decision": "approve",
        },
        headers={**FORM, "Accept": "application/json"},
    )
    assert expect(approval, 200) == {"status": "approved"}
    issued = expect(
        client.post(
            "/idp/token",
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": authorization["device_code"],
                "client_id": config["client_id"],
            },
            headers=FORM,
        ),
        200,
    )
    session = expect(client.post("/v1/auth/sessions", headers=bearer(issued["access_token"])), 201)
    assert session["user"]["email"] == email
    token: str = session["token"]
    return token


def workspace_admin(client: httpx2.Client, email: str) -> tuple[dict[str, Any], str]:
    """Sign ``email`` up and in, create a workspace and switch to it: the workspace and
    the scoped session token."""
    token = sign_up_and_in(client, email)
    workspace: dict[str, Any] = expect(
        client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)), 201
    )
    switched = expect(
        client.post(
            "/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=bearer(token)
        ),
        201,
    )
    scoped: str = switched["token"]
    return workspace, scoped
