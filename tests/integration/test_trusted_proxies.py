"""``X-Forwarded-For`` is believed only from ``STRONGROOM_TRUSTED_PROXIES`` (contract 13,
issue 27 finding 7): without the setting, a client on the same host cannot rotate the
header to escape the sign-in rate limit; with it, the proxy's clients are told apart.

Runs the real ``strongroom serve`` (uvicorn), whose defaults would believe any loopback
client."""

from __future__ import annotations

from pathlib import Path

import httpx2
from integration_world import FORM, PASSWORD, expect
from live_server import client_for

from support.serve_process import free_port, serving

EMAIL = "ada@example.com"
# The per-email-and-address limit of failed approvals (contract 13): 10 per 15 minutes.
LIMIT = 10


def failed_approvals(client: httpx2.Client, forwarded_for: list[str]) -> list[int]:
    """One wrong-password approval per entry, each from the address the header names; a
    new device code every four tries (a code dies after five failures)."""
    statuses = []
    user_code = ""
    for number, address in enumerate(forwarded_for):
        if number % 4 == 0:
            grant = client.post(
                "/idp/device/code", data={"client_id": "strongroom-cli"}, headers=FORM
            )
            user_code = expect(grant, 200)["user_code"]
        answer = client.post(
            "/idp/device",
            data={
                "user_code": user_code,
                "email": EMAIL,
                "password": "not the password",
                "decision": "approve",
            },
            headers={**FORM, "Accept": "application/json", "X-Forwarded-For": address},
        )
        statuses.append(answer.status_code)
    return statuses


def sign_up(client: httpx2.Client) -> None:
    data = {"email": EMAIL, "password": PASSWORD, "name": "Ada"}
    expect(client.post("/idp/signup", data=data, headers=FORM), 201)


def test_a_forwarded_header_from_an_untrusted_client_is_ignored(tmp_path: Path) -> None:
    rotating = [f"203.0.113.{n}" for n in range(LIMIT + 1)]
    with (
        serving(tmp_path / "data", free_port(), tmp_path / "log") as url,
        client_for(url) as client,
    ):
        sign_up(client)
        statuses = failed_approvals(client, rotating)
    assert statuses[:LIMIT] == [400] * LIMIT
    assert statuses[LIMIT] == 429


def test_a_trusted_proxy_tells_its_clients_apart(tmp_path: Path) -> None:
    rotating = [f"203.0.113.{n}" for n in range(LIMIT + 1)]
    same = ["198.51.100.7"] * (LIMIT + 1)
    configuration = {"STRONGROOM_TRUSTED_PROXIES": "127.0.0.1/32"}
    with (
        serving(tmp_path / "data", free_port(), tmp_path / "log", configuration) as url,
        client_for(url) as client,
    ):
        sign_up(client)
        assert failed_approvals(client, rotating) == [400] * (LIMIT + 1)
        assert failed_approvals(client, same)[LIMIT] == 429
