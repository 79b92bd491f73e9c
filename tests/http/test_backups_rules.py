"""HTTP tests of the backup rules: one test per rule family (kind rules, activation,
write-once retention) proving its status code, error code and wire shape. The rules
themselves are tested in ``tests/domain/test_backup_aggregate.py`` and, as a whole
change, in ``tests/usecases/test_backups.py``."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from support.backups_http import RETENTION, S3_SOURCE, Tenant
from support.checks import assert_error


class TestKindRules:
    """What each kind accepts: refusals are 422 ``validation_failed`` and change nothing."""

    @pytest.mark.parametrize(
        ("kind", "body", "fragment"),
        [
            ("local", {"worker_id": str(uuid4())}, "worker_id names no worker"),
            ("manual", {"schedule": None}, "schedule is refused on a manual backup"),
            ("local", {"source": {"type": "ftp"}}, "source is refused on a local backup"),
            (
                "cloud",
                {"source": {"type": "gcs", "bucket": "bucket-b", "anything": 1}},
                "source type gcs is not offered for cloud",
            ),
            (
                "cloud",
                {"source": {**S3_SOURCE, "type": "S3"}},
                "source type S3 is not offered for cloud",
            ),
        ],
    )
    def test_refuses_what_the_kind_does_not_accept(
        self, ada: Tenant, kind: str, body: dict[str, Any], fragment: str
    ) -> None:
        """A kind rule is 422 ``validation_failed`` naming the rule, and nothing changes.
        The cases here are those the wire decides: a worker id looked up, ``null`` for a
        schedule, and an unknown source ``type`` (whatever its other fields, in any case)
        read as a source the kind refuses rather than a malformed body. Every rule is in
        ``tests/usecases/test_backups.py::TestKindRules``; credentials of no source type's
        shape are malformed: ``test_backups_patch.py::TestCredentialShapes``."""
        before = ada.backup("Nightly", kind)
        assert_error(ada.patch(before["id"], body), 422, "validation_failed", fragment)
        assert ada.read(before["id"]) == before

    def test_error_messages_never_repeat_a_secret(self, ada: Tenant) -> None:
        """A refused credential object is not echoed in the error, whether it is malformed
        (400) or of the other source type (422)."""
        record = ada.backup("Nightly", "cloud")
        wrong = {"username": "u", "token": "leaky-secret-value"}
        response = ada.patch(record["id"], {"source": S3_SOURCE, "credentials": wrong})
        assert_error(response, 400, "invalid_request", "credentials.token")
        assert "leaky-secret-value" not in response.text
        other = {"username": "u", "password": "leaky-secret-value"}
        response = ada.patch(record["id"], {"source": S3_SOURCE, "credentials": other})
        assert_error(response, 422, "validation_failed")
        assert "leaky-secret-value" not in response.text


class TestActivation:
    """A backup becomes ``active`` in the PATCH that completes its kind's configuration."""

    def test_manual_needs_only_retention(self, ada: Tenant) -> None:
        """A manual backup with a retention policy is active (every kind's activation is in
        ``tests/usecases/test_backups.py::TestActivation``)."""
        record = ada.backup("Nightly", "manual")
        assert ada.patched(record["id"], {"retention": RETENTION})["state"] == "active"
        assert ada.read(record["id"])["state"] == "active"


class TestRetention:
    """Retention is write-once, in canonical durations, with the lock inside the expiry."""

    def test_is_returned_in_canonical_form(self, ada: Tenant) -> None:
        """Weeks become days, hours fold into days, zero parts are omitted."""
        record = ada.backup()
        patched = ada.patched(
            record["id"], {"retention": {"expire_after": "P1W", "lock_for": "PT36H"}}
        )
        assert patched["retention"] == {"expire_after": "P7D", "lock_for": "P1DT12H"}
        assert ada.read(record["id"])["retention"] == patched["retention"]

    def test_a_different_policy_is_refused(self, ada: Tenant) -> None:
        """Once set, another policy is 409 ``retention_immutable`` and the first one stays
        (more policies in ``tests/usecases/test_backups.py::TestRetention``)."""
        other = {"expire_after": "P8D", "lock_for": "P1D"}
        record = ada.backup()
        ada.patched(record["id"], {"retention": {"expire_after": "P7D", "lock_for": "P1D"}})
        assert_error(ada.patch(record["id"], {"retention": other}), 409, "retention_immutable")
        stored = ada.read(record["id"])
        assert stored["retention"] == {"expire_after": "P7D", "lock_for": "P1D"}

    def test_a_lock_longer_than_the_expiry_is_refused(self, ada: Tenant) -> None:
        """``lock_for`` longer than ``expire_after`` is 422 ``lock_exceeds_expiry`` (more
        policies in ``tests/usecases/test_backups.py::TestRetention``)."""
        policy = {"expire_after": "P7D", "lock_for": "P8D"}
        record = ada.backup()
        assert_error(ada.patch(record["id"], {"retention": policy}), 422, "lock_exceeds_expiry")
        stored = ada.read(record["id"])
        assert stored["retention"] is None
        assert stored["state"] == "draft"
