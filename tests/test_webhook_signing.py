"""Webhook signatures follow Standard Webhooks: checked here by hand (HMAC-SHA-256 over
``id.timestamp.body`` with the base64-decoded secret) and by the reference verifier."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from strongroom.adapters.webhooks.signing import new_secret, signed_headers


@given(st.text(max_size=200), st.uuids())
def test_an_independent_hmac_check_accepts_the_signature(body: str, message: object) -> None:
    secret = new_secret()
    at = datetime(2026, 11, 27, 12, 0, 5, tzinfo=UTC)
    headers = signed_headers(secret, f"msg_{message}", at, body)
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = hmac.new(key, f"msg_{message}.1795780805.{body}".encode(), hashlib.sha256)
    assert headers["webhook-timestamp"] == "1795780805"
    assert headers["webhook-signature"] == "v1," + base64.b64encode(expected.digest()).decode()


def test_the_reference_verifier_accepts_it_and_refuses_a_changed_body() -> None:
    secret = new_secret()
    headers = signed_headers(secret, "msg_1", datetime.now(UTC), '{"type":"run.failed"}')
    assert Webhook(secret).verify('{"type":"run.failed"}', headers) == {"type": "run.failed"}
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify('{"type":"run.succeeded"}', headers)


def test_secrets_are_fresh_and_shaped() -> None:
    first, second = new_secret(), new_secret()
    assert first != second
    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 24
