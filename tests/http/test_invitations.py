"""HTTP tests of invitations (contract 3, 4 and 10) and of the mailer adapters.

Inviting with a role the inviter holds, delivery through the mailer, acceptance by the
invited email only (case-insensitively), seven-day expiry, one-time use, and
``members_per_workspace`` counting members plus pending invitations.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import httpx2
import pytest

from strongroom.adapters.mail import LoggingMailer, SmtpMailer, SmtpSettings
from strongroom.adapters.memory.services import ManualClock, OutboxMailer
from strongroom.adapters.runtime.blocking import blocking_call
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
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

    def test_an_invitation_is_created_mailed_and_listed(self, world: Inviting) -> None:
        """201 pending for seven days; the mail holds the acceptance link."""
        created = world.invite("  Ann@Example.com ", "member")
        assert created.status_code == 201, created.text
        body = created.json()
        assert set(body) == {"id", "email", "role", "state", "expires_at", "created_at"}
        assert (body["email"], body["role"], body["state"]) == (
            "Ann@Example.com",
            "member",
            "pending",
        )
        expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
        made = datetime.fromisoformat(body["created_at"].replace("Z", "+00:00"))
        assert expires - made == timedelta(days=7)
        (message,) = world.outbox.outbox
        assert message.to == "Ann@Example.com"
        assert f"/v1/invitations/{body['id']}/accept" in message.body
        listed = world.api.client.get(world.path, headers=world.headers).json()
        assert listed == {"data": [body], "next_cursor": None}

    def test_an_invitation_cannot_grant_more_than_the_inviter_holds(self, world: Inviting) -> None:
        """A member (no ``members:write``...) cannot invite an admin: 403, audited."""
        token = world.api.person("mia@example.com")
        me = world.api.client.get("/v1/me", headers=bearer(token)).json()
        with world.facade.deps.uow() as uow:
            uow.memberships.add(
                Membership(
                    world.workspace_id, UUID(me["principal"]["id"]), "member", world.clock.now()
                )
            )
            uow.commit()
        mia = world.api.switch(token, world.workspace_id)
        assert_error(
            world.invite("x@example.com", "admin", token=mia),
            403,
            "forbidden",
            "missing permission",
        )
        world.clock.advance(timedelta(seconds=1))
        assert world.invite("y@example.com", "member", token=mia).status_code == 201
        audit = world.api.client.get(
            f"/v1/workspaces/{world.workspace_id}/audit",
            params={"action": "invitation.create"},
            headers=world.headers,
        ).json()["data"]
        assert [e["outcome"] for e in audit] == ["success", "denied"], audit

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

    def test_members_and_pending_invitations_share_the_quota(self, world: Inviting) -> None:
        """Limit 2: Ada plus one pending invitation fill it; an expired one frees its seat."""
        world.facade.workspaces.set_quota(
            world.workspace_id, QuotaResource.MEMBERS_PER_WORKSPACE, 2
        )
        assert world.invite("ann@example.com").status_code == 201
        assert_error(
            world.invite("bob@example.com"), 409, "quota_exceeded", "members_per_workspace"
        )
        quotas = world.api.client.get(
            f"/v1/workspaces/{world.workspace_id}/quotas", headers=world.headers
        ).json()["data"]
        assert {q["resource"]: q["usage"] for q in quotas}["members_per_workspace"] == 2
        world.clock.advance(timedelta(days=7))
        fresh = world.api.switch(world.api.person("ada@example.com"), world.workspace_id)
        assert world.invite("bob@example.com", token=fresh).status_code == 201


class TestAccepting:
    """``POST /v1/invitations/{id}/accept``."""

    def test_the_invited_person_joins_with_the_role(self, world: Inviting) -> None:
        """200 membership; the email matches in any case; switching then works."""
        invitation = world.invite("ann@example.com", "member").json()
        ann = world.api.person("ANN@example.com")
        accepted = world.accept(invitation["id"], ann)
        assert accepted.status_code == 200, accepted.text
        body = accepted.json()
        assert set(body) == {"workspace_id", "user_id", "role", "joined_at"}
        assert (body["workspace_id"], body["role"]) == (str(world.workspace_id), "member")
        scoped = world.api.switch(ann, world.workspace_id)
        me = world.api.client.get("/v1/me", headers=bearer(scoped)).json()
        assert "backups:write" in me["permissions"]
        listed = world.api.client.get(world.path, headers=world.headers).json()["data"]
        assert listed[0]["state"] == "accepted"
        assert_error(world.accept(invitation["id"], scoped), 409, "invalid_state")

    def test_another_email_sees_nothing(self, world: Inviting) -> None:
        """404 for another person, and for an unknown id."""
        invitation = world.invite("ann@example.com").json()
        bob = world.api.person("bob@example.com")
        assert_error(world.accept(invitation["id"], bob), 404, "not_found")
        assert_error(world.accept(str(uuid4()), bob), 404, "not_found")
        assert_error(world.accept("nope", bob), 400, "invalid_request")

    def test_an_expired_invitation_cannot_be_used(self, world: Inviting) -> None:
        """After seven days: 409 ``invalid_state``; listed as expired."""
        invitation = world.invite("ann@example.com").json()
        world.clock.advance(timedelta(days=7))
        ann = world.api.person("ann@example.com")
        assert_error(world.accept(invitation["id"], ann), 409, "invalid_state", "expired")
        fresh = world.api.switch(world.api.person("ada@example.com"), world.workspace_id)
        listed = world.api.client.get(world.path, headers=bearer(fresh)).json()["data"]
        assert listed[0]["state"] == "expired"

    def test_machines_cannot_accept(self, world: Inviting) -> None:
        """An API key: 403 ``forbidden``."""
        key = world.api.client.post(
            "/v1/api-keys", json={"name": "k", "permissions": []}, headers=world.headers
        ).json()["token"]
        invitation = world.invite("ann@example.com").json()
        assert_error(world.accept(invitation["id"], key), 403, "forbidden")

    def test_a_role_with_pending_invitations_cannot_be_deleted(self, world: Inviting) -> None:
        """409 ``invalid_state`` while an unused invitation gives the role."""
        base = f"/v1/workspaces/{world.workspace_id}/roles"
        created = world.api.client.post(
            base, json={"slug": "ops", "name": "Ops", "permissions": []}, headers=world.headers
        )
        assert created.status_code == 201
        assert world.invite("ann@example.com", "ops").status_code == 201
        deleted = world.api.client.delete(f"{base}/ops", headers=world.headers)
        assert_error(deleted, 409, "invalid_state")


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
