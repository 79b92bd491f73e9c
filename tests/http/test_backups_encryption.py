"""A backup's `format` and `encryption` on the wire (contract 14): status codes, the
refusals' messages and the record's shape; the rules are in
``tests/domain/test_backup_encryption.py``."""

from __future__ import annotations

from support.backups_http import Tenant
from support.checks import assert_error

ALICE = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
BOB = "age19z6knhe43g4jxkugekvjznurg4qcf7pelrhyjmmcq5htrhdwe4mq6g28jl"


class TestCreate:
    def test_archive_by_default_snapshot_with_recipients(self, ada: Tenant) -> None:
        """`format` follows `encryption`; duplicates go; a GET reads the same."""
        archive = ada.backup("Plain")
        assert (archive["format"], archive["encryption"]) == ("archive", None)
        created = ada.create(
            {"name": "Home", "kind": "local", "encryption": {"recipients": [ALICE, ALICE]}}
        )
        assert created.status_code == 201, created.text
        record = created.json()
        assert (record["format"], record["encryption"]) == ("snapshot", {"recipients": [ALICE]})
        assert ada.read(record["id"]) == record

    def test_refusals(self, ada: Tenant) -> None:
        """A malformed recipient names its index (422); a cloud backup refuses (422)."""
        bad = ada.create(
            {"name": "Home", "kind": "manual", "encryption": {"recipients": [ALICE, "age1x"]}}
        )
        assert_error(bad, 422, "validation_failed")
        assert "encryption.recipients[1] is not an age recipient" in bad.json()["error"]["message"]
        cloud = ada.create({"name": "Db", "kind": "cloud", "encryption": {"recipients": [ALICE]}})
        assert_error(cloud, 422, "validation_failed")
        unknown = ada.create(
            {"name": "Db", "kind": "manual", "encryption": {"recipients": [ALICE], "x": 1}}
        )
        assert_error(unknown, 400, "invalid_request")


class TestPatch:
    def test_set_replace_and_never_remove(self, ada: Tenant) -> None:
        """A PATCH makes a backup a snapshot one, replaces its recipients, and `null`
        is then 409 `invalid_state`; the audit shows the recipients."""
        backup_id = ada.backup("Home", "manual")["id"]
        record = ada.patched(backup_id, {"encryption": {"recipients": [ALICE]}})
        assert (record["format"], record["encryption"]) == ("snapshot", {"recipients": [ALICE]})
        record = ada.patched(backup_id, {"encryption": {"recipients": [BOB]}})
        assert record["encryption"] == {"recipients": [BOB]}
        assert_error(ada.patch(backup_id, {"encryption": None}), 409, "invalid_state")
        assert ada.read(backup_id) == record
        events = ada.audit(action="backup.update").json()["data"]
        assert events[0]["changes"]["encryption"] == {"from": [ALICE], "to": [BOB]}
        assert events[1]["changes"]["encryption"] == {"from": None, "to": [ALICE]}


class TestReplay:
    def test_an_idempotent_create_replays_the_snapshot_backup(self, ada: Tenant) -> None:
        """The kept result restores the recipients: the replay is the first answer."""
        body = {"name": "Home", "kind": "manual", "encryption": {"recipients": [ALICE]}}
        key = {"Idempotency-Key": "snapshot-backup-1"}
        first = ada.create(body, key)
        assert first.status_code == 201, first.text
        again = ada.create(body, key)
        assert (again.status_code, again.json()) == (201, first.json())
