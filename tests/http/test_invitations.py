"""HTTP tests of invitations (contract 3, 4 and 10) and of the mailer adapters.

The routes' wire shapes, status codes and order of checks, and the mailers. The rules
(a role the inviter holds, acceptance by the invited email only, seven-day expiry, one-time
use, seats shared with members): ``tests/usecases/test_invitation_rules.py`` and
``tests/usecases/test_members.py::TestInvitations``.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import httpx2
import pytest

from strongroom.adapters.mail import LoggingMailer, SmtpMailer, SmtpSettings
from strongroom.adapters.memory.services import ManualClock, OutboxMailer
from strongroom.adapters.runtime.blocking import blocking_call
from strongroom.entrypoints.service import mailer_for
from strongroom.entrypoints.settings import Settings
from support.checks import assert_error
from support.world import Api, bearer, make_client, make_facade


class Inviting:
    """Ada's workspace, its outbox, and a clock the test moves."""

    def __init__(self) -> None:
        self.clock = ManualClock(datetime.now(UTC))
        self.outbox = OutboxMailer()
        self.facade = make_facade(clock=self.clock, mailer=self.outbox)

    def start(self, client: Any) -> None:
        self.api = Api(self.facade, client)
        self.token, self.workspace_id = self.api.workspace_admin("ada@example.com")
        self.headers = bearer(self.token)

    @property
    def path(self) -> str:
        return f"/v1/workspaces/{self.workspace_id}/invitations"

    def invite(self, email: str, role: str = "viewer", token: str | None = None) -> httpx2.Response:
        return self.api.client.post(
            self.path, json={"email": email, "role": role}, headers=bearer(token or self.token)
        )

    def accept(self, invitation_id: str, token: str) -> httpx2.Response:
        return self.api.client.post(
            f"/v1/invitations/{invitation_id}/accept", headers=bearer(token)
        )


@pytest.fixture
def world() -> Iterator[Inviting]:
    """Ada administers a workspace; mail goes to an outbox."""
    inviting = Inviting()
    with make_client(inviting.facade) as client:
        inviting.start(client)
        yield inviting


class TestInviting:
    """``POST`` and ``GET .../invitations``."""

    def test_the_mailed_link_ignores_the_request_host(self, world: Inviting) -> None:
        """``Host: evil.example:666``: the mail's link is on the server's own address,
        never the request's host (issue 27, finding 10)."""
        created = world.api.client.post(
            world.path,
            json={"email": "ann@example.com", "role": "viewer"},
            headers={**world.headers, "Host": "evil.example:666"},
        )
        assert created.status_code == 201, created.text
        (mail,) = world.outbox.outbox
        assert "evil.example" not in mail.body
        assert "http://testserver:80/" in mail.body

    def test_an_invitation_is_created_and_listed(self, world: Inviting) -> None:
        """201 with the invitation's fields, timestamps in the API's form; the list's
        envelope holds it (seven days, the mail, the email kept as given:
        ``tests/usecases/test_invitation_rules.py``)."""
        created = world.invite("ann@example.com", "member")
        assert created.status_code == 201, created.text
        body = created.json()
        assert set(body) == {"id", "email", "role", "state", "expires_at", "created_at"}
        assert (body["email"], body["role"], body["state"]) == (
            "ann@example.com",
            "member",
            "pending",
        )
        assert body["expires_at"].endswith("Z")
        listed = world.api.client.get(world.path, headers=world.headers).json()
        assert listed == {"data": [body], "next_cursor": None}

    @pytest.mark.parametrize(
        ("body", "status", "code"),
        [
            ({"email": "not-an-email", "role": "viewer"}, 400, "invalid_request"),
            ({"email": "a b@example.com", "role": "viewer"}, 400, "invalid_request"),
            ({"email": "a@example.com", "role": "Bad Slug"}, 400, "invalid_request"),
            ({"email": "a@example.com"}, 400, "invalid_request"),
            ({"email": "a@example.com", "role": "ghost"}, 422, "validation_failed"),
        ],
    )
    def test_bad_invitations(
        self, world: Inviting, body: dict[str, Any], status: int, code: str
    ) -> None:
        """Malformed: 400; a role the workspace does not have: 422."""
        response = world.api.client.post(world.path, json=body, headers=world.headers)
        assert_error(response, status, code)


class TestAccepting:
    """``POST /v1/invitations/{id}/accept``."""

    def test_accepting_answers_the_membership(self, world: Inviting) -> None:
        """200 with the membership's fields; a second acceptance 409 ``invalid_state``; an
        unknown id 404, a malformed one 400 (who may accept, and when:
        ``tests/usecases/test_invitation_rules.py``)."""
        invitation = world.invite("ann@example.com", "member").json()
        ann = world.api.person("ann@example.com")
        accepted = world.accept(invitation["id"], ann)
        assert accepted.status_code == 200, accepted.text
        body = accepted.json()
        assert set(body) == {"workspace_id", "user_id", "role", "joined_at"}
        assert (body["workspace_id"], body["role"]) == (str(world.workspace_id), "member")
        assert_error(world.accept(invitation["id"], ann), 409, "invalid_state")
        assert_error(world.accept(str(uuid4()), ann), 404, "not_found")
        assert_error(world.accept("nope", ann), 400, "invalid_request")


class TestMailers:
    """The logging default and the SMTP adapter."""

    def test_the_logging_mailer_logs_the_link(self, caplog: pytest.LogCaptureFixture) -> None:
        """The message (with its link) goes to the log."""
        caplog.set_level(logging.INFO, logger="strongroom.adapters.mail")
        blocking_call(
            LoggingMailer().send("ann@example.com", "Join", "accept at https://x/v1/invitations/1")
        )
        assert "ann@example.com" in caplog.text
        assert "https://x/v1/invitations/1" in caplog.text

    def test_the_configuration_picks_the_mailer(self) -> None:
        """SMTP when ``STRONGROOM_SMTP_HOST`` is set, else the logging mailer."""
        assert isinstance(mailer_for(Settings.from_env({})), LoggingMailer)
        smtp = Settings.from_env(
            {"STRONGROOM_SMTP_HOST": "mail.example.com", "STRONGROOM_SMTP_PASSWORD": "pw-123"}
        )
        assert isinstance(mailer_for(smtp), SmtpMailer)
        assert "pw-123" not in repr(smtp)

    def test_the_smtp_mailer_speaks_smtp(self) -> None:
        """A message reaches a loopback SMTP server with its recipient and subject."""
        received: list[str] = []
        server = socket.create_server(("127.0.0.1", 0))
        port = server.getsockname()[1]

        def serve() -> None:
            connection, _ = server.accept()
            with connection, connection.makefile("rwb") as stream:

                def say(line: str) -> None:
                    stream.write(line.encode() + b"\r\n")
                    stream.flush()

                say("220 test ESMTP")
                in_data = False
                while True:
                    raw = stream.readline()
                    if not raw:
                        return
                    line = raw.decode().rstrip("\r\n")
                    received.append(line)
                    if in_data:
                        if line == ".":
                            in_data = False
                            say("250 queued")
                        continue
                    verb = line.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        say("250 test")
                    elif verb == "DATA":
                        in_data = True
                        say("354 go on")
                    elif verb == "QUIT":
                        say("221 bye")
                        return
                    else:
                        say("250 ok")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            mailer = SmtpMailer(
                SmtpSettings(host="127.0.0.1", port=port, sender="sr@example.com", starttls=False)
            )
            blocking_call(mailer.send("ann@example.com", "Join Acme", "accept here"))
        finally:
            thread.join(timeout=5)
            server.close()
        text = "\n".join(received)
        assert "rcpt to:<ann@example.com>" in text.lower()
        assert "Subject: Join Acme" in text
        assert "accept here" in text
