"""HTTP tests of the backup rules: one test per rule family (kind rules, activation,
write-once retention) proving its status code, error code and wire shape. The rules
themselves are tested in ``tests/domain/test_backup_aggregate.py`` and, as a whole
change, in ``tests/usecases/test_backups.py``."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from support.backups_http import (
    CLOUD_COMPLETE,
    CUSTOMER_S3,
    DESTINATION_CREDENTIALS,
    PG_CREDENTIALS,
    PG_SOURCE,
    RETENTION,
    S3_CREDENTIALS,
    S3_SOURCE,
    SCHEDULE,
    Tenant,
)
from support.checks import assert_error


class TestKindRules:
    """What each kind accepts: refusals are 422 ``validation_failed`` and change nothing."""

    @pytest.mark.parametrize(
        ("kind", "body", "fragment"),
        [
            ("manual", {"worker_id": str(uuid4())}, "worker_id is allowed only on a local"),
            ("cloud", {"worker_id": str(uuid4())}, "worker_id is allowed only on a local"),
            ("local", {"worker_id": str(uuid4())}, "worker_id names no worker"),
            ("local", {"source": S3_SOURCE}, "source is refused on a local backup"),
            ("manual", {"source": PG_SOURCE}, "source is refused on a manual backup"),
            ("local", {"source": {"type": "ftp"}}, "source is refused on a local backup"),
            ("local", {"credentials": S3_CREDENTIALS}, "credentials is refused on a local"),
            ("manual", {"credentials": PG_CREDENTIALS}, "credentials is refused on a manual"),
            ("manual", {"schedule": SCHEDULE}, "schedule is refused on a manual backup"),
            ("manual", {"schedule": None}, "schedule is refused on a manual backup"),
            ("cloud", {"source": {"type": "ftp"}}, "source type ftp is not offered for cloud"),
            (
                "cloud",
                {"source": {"type": "gcs", "bucket": "b", "anything": 1}},
                "source type gcs is not offered for cloud",
            ),
            (
                "cloud",
                {"source": {**S3_SOURCE, "type": "S3"}},
                "source type S3 is not offered for cloud",
            ),
            (
                "cloud",
                {"source": S3_SOURCE, "credentials": PG_CREDENTIALS},
                "access_key_id, secret_access_key",
            ),
            (
                "cloud",
                {"source": PG_SOURCE, "credentials": S3_CREDENTIALS},
                "password, username",
            ),
            ("cloud", {"credentials": S3_CREDENTIALS}, "credentials need a source"),
            (
                "cloud",
                {"destination_credentials": DESTINATION_CREDENTIALS},
                "only to a customer_s3 destination",
            ),
            ("cloud", {"destination": CUSTOMER_S3}, "needs destination_credentials"),
        ],
    )
    def test_refuses_what_the_kind_does_not_accept(
        self, ada: Tenant, kind: str, body: dict[str, Any], fragment: str
    ) -> None:
        """The spec's kind rules, and credentials of the other source type's shape, are
        422 (credentials of no source type's shape are malformed: ``TestCredentialShapes``)."""
        before = ada.backup("Nightly", kind)
        assert_error(ada.patch(before["id"], body), 422, "validation_failed", fragment)
        assert ada.read(before["id"]) == before

    def test_changing_the_source_type_needs_new_credentials(self, ada: Tenant) -> None:
        """An s3 source with s3 credentials cannot become postgres without new credentials."""
        record = ada.backup("Nightly", "cloud")
        ada.patched(record["id"], {"source": S3_SOURCE, "credentials": S3_CREDENTIALS})
        assert_error(
            ada.patch(record["id"], {"source": PG_SOURCE}),
            422,
            "validation_failed",
            "new credentials",
        )
        both = ada.patched(record["id"], {"source": PG_SOURCE, "credentials": PG_CREDENTIALS})
        assert both["source"] == PG_SOURCE

    def test_credentials_are_checked_against_the_stored_source(self, ada: Tenant) -> None:
        """Credentials sent alone must fit the source already stored."""
        record = ada.backup("Nightly", "cloud")
        ada.patched(record["id"], {"source": PG_SOURCE})
        assert_error(
            ada.patch(record["id"], {"credentials": S3_CREDENTIALS}),
            422,
            "validation_failed",
            "password, username",
        )
        assert ada.patched(record["id"], {"credentials": PG_CREDENTIALS})["has_credentials"]

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
        """A manual backup with a retention policy is active."""
        record = ada.backup("Nightly", "manual")
        assert ada.patched(record["id"], {"retention": RETENTION})["state"] == "active"
        assert ada.read(record["id"])["state"] == "active"

    @pytest.mark.parametrize(
        ("source", "credentials"), [(S3_SOURCE, S3_CREDENTIALS), (PG_SOURCE, PG_CREDENTIALS)]
    )
    def test_cloud_in_one_patch(
        self, ada: Tenant, source: dict[str, Any], credentials: dict[str, str]
    ) -> None:
        """Source, credentials and retention in one PATCH make a cloud backup active."""
        record = ada.backup("Nightly", "cloud")
        patched = ada.patched(
            record["id"],
            {"source": source, "credentials": credentials, "retention": RETENTION},
        )
        assert patched["state"] == "active"
        assert patched["has_credentials"] is True
        assert patched["source"]["type"] == source["type"]
        assert ada.read(record["id"]) == patched

    @pytest.mark.parametrize(
        "order",
        [
            ("source", "credentials", "retention"),
            ("retention", "source", "credentials"),
            ("source", "retention", "credentials"),
        ],
    )
    def test_cloud_step_by_step(self, ada: Tenant, order: tuple[str, str, str]) -> None:
        """A cloud backup stays a draft until the PATCH that supplies its last piece."""
        record = ada.backup("Nightly", "cloud")
        states = [ada.patched(record["id"], {f: CLOUD_COMPLETE[f]})["state"] for f in order]
        assert states == ["draft", "draft", "active"]
        assert ada.read(record["id"])["state"] == "active"

    @pytest.mark.parametrize("kind", ["manual", "cloud", "local"])
    def test_drafts_stay_drafts_without_retention(self, ada: Tenant, kind: str) -> None:
        """Without retention no kind is complete."""
        record = ada.backup("Nightly", kind)
        body = {"source": S3_SOURCE, "credentials": S3_CREDENTIALS} if kind == "cloud" else {}
        assert ada.patched(record["id"], {"name": "Renamed", **body})["state"] == "draft"

    def test_local_cannot_activate_without_a_worker(self, ada: Tenant) -> None:
        """A local backup needs a worker; none exists yet, so it stays a draft."""
        record = ada.backup("Laptop", "local")
        assert ada.patched(record["id"], {"retention": RETENTION})["state"] == "draft"
        assert_error(
            ada.patch(record["id"], {"worker_id": str(uuid4())}),
            422,
            "validation_failed",
            "names no worker",
        )
        stored = ada.read(record["id"])
        assert stored["state"] == "draft"
        assert stored["worker_id"] is None

    def test_activation_is_audited(self, ada: Tenant) -> None:
        """The PATCH that activates writes a ``backup.update`` event with the state change."""
        record = ada.backup("Nightly", "manual")
        ada.patched(record["id"], {"retention": RETENTION})
        events = ada.audit(action="backup.update").json()["data"]
        assert len(events) == 1
        assert events[0]["target"] == {"type": "backup", "id": record["id"]}
        assert events[0]["changes"]["state"] == {"from": "draft", "to": "active"}


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

    @pytest.mark.parametrize(
        ("sent", "shown"),
        [
            (
                {"expire_after": "P30D", "lock_for": "PT0S"},
                {"expire_after": "P30D", "lock_for": "PT0S"},
            ),
            (
                {"expire_after": "P4W", "lock_for": "P0D"},
                {"expire_after": "P28D", "lock_for": "PT0S"},
            ),
            (
                {"expire_after": "PT90M", "lock_for": "PT90M"},
                {"expire_after": "PT1H30M", "lock_for": "PT1H30M"},
            ),
            (
                {"expire_after": "P1DT0H", "lock_for": "PT1S"},
                {"expire_after": "P1D", "lock_for": "PT1S"},
            ),
        ],
    )
    def test_canonical_forms(
        self, ada: Tenant, sent: dict[str, str], shown: dict[str, str]
    ) -> None:
        """Each accepted policy comes back canonical; a lock equal to the expiry is allowed."""
        record = ada.backup()
        assert ada.patched(record["id"], {"retention": sent})["retention"] == shown

    @pytest.mark.parametrize(
        "same",
        [
            {"expire_after": "P7D", "lock_for": "P1D"},
            {"expire_after": "P1W", "lock_for": "PT24H"},
            {"expire_after": "PT168H", "lock_for": "PT86400S"},
        ],
    )
    def test_an_identical_policy_is_accepted_again(self, ada: Tenant, same: dict[str, str]) -> None:
        """Re-sending an equal policy (compared as seconds, so P7D equals P1W) is 200."""
        record = ada.backup()
        first = ada.patched(record["id"], {"retention": {"expire_after": "P1W", "lock_for": "P1D"}})
        again = ada.patched(record["id"], {"retention": same})
        assert (
            again["retention"] == first["retention"] == {"expire_after": "P7D", "lock_for": "P1D"}
        )

    @pytest.mark.parametrize(
        "other",
        [
            {"expire_after": "P8D", "lock_for": "P1D"},
            {"expire_after": "P7D", "lock_for": "PT0S"},
            {"expire_after": "P7D", "lock_for": "P7D"},
        ],
    )
    def test_a_different_policy_is_refused(self, ada: Tenant, other: dict[str, str]) -> None:
        """Once set, another policy is 409 ``retention_immutable`` and the first one stays."""
        record = ada.backup()
        ada.patched(record["id"], {"retention": {"expire_after": "P7D", "lock_for": "P1D"}})
        assert_error(ada.patch(record["id"], {"retention": other}), 409, "retention_immutable")
        stored = ada.read(record["id"])
        assert stored["retention"] == {"expire_after": "P7D", "lock_for": "P1D"}

    def test_a_refused_policy_discards_the_rest_of_the_patch(self, ada: Tenant) -> None:
        """A PATCH refused for retention applies none of its other fields."""
        record = ada.backup("Nightly")
        ada.patched(record["id"], {"retention": RETENTION})
        response = ada.patch(
            record["id"], {"name": "Renamed", "retention": {**RETENTION, "lock_for": "P1D"}}
        )
        assert_error(response, 409, "retention_immutable")
        assert ada.read(record["id"])["name"] == "Nightly"

    @pytest.mark.parametrize(
        "policy",
        [
            {"expire_after": "P7D", "lock_for": "P8D"},
            {"expire_after": "PT1H", "lock_for": "PT3601S"},
            {"expire_after": "P1D", "lock_for": "P1W"},
        ],
    )
    def test_a_lock_longer_than_the_expiry_is_refused(
        self, ada: Tenant, policy: dict[str, str]
    ) -> None:
        """``lock_for`` longer than ``expire_after`` is 422 ``lock_exceeds_expiry``."""
        record = ada.backup()
        assert_error(ada.patch(record["id"], {"retention": policy}), 422, "lock_exceeds_expiry")
        stored = ada.read(record["id"])
        assert stored["retention"] is None
        assert stored["state"] == "draft"
