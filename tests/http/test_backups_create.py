"""HTTP tests of backup creation (contract sections 1, 5, 8): ``POST
/v1/workspaces/{wid}/backups``, its body, quota and Idempotency-Key."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest

from strongroom.domain.quotas import QuotaResource
from support.backups_http import (
    NOT_JSON,
    RECORD_FIELDS,
    Tenant,
)
from support.checks import assert_error


class TestCreate:
    """``POST /v1/workspaces/{wid}/backups``."""

    @pytest.mark.parametrize("kind", ["local", "manual", "cloud"])
    def test_creates_a_draft_with_the_whole_record(self, ada: Tenant, kind: str) -> None:
        """201 with the contract's record: a draft of the given kind, nothing configured yet."""
        response = ada.create({"name": "Nightly", "kind": kind})
        assert response.status_code == 201, response.text
        record = response.json()
        assert set(record) == RECORD_FIELDS
        UUID(record["id"])
        assert record["workspace_id"] == str(ada.workspace_id)
        assert record["name"] == "Nightly"
        assert record["kind"] == kind
        assert record["state"] == "draft"
        assert record["paused"] is False
        assert record["source"] is None
        assert record["has_credentials"] is False
        assert record["schedule"] is None
        assert record["worker_id"] is None
        assert record["retention"] is None
        assert record["destination"] == {"type": "service"}
        assert record["next_run_at"] is None
        assert record["created_at"].endswith("Z")
        assert record["created_at"] == record["updated_at"]
        assert ada.read(record["id"]) == record

    def test_stores_the_name_trimmed(self, ada: Tenant) -> None:
        """Surrounding whitespace is removed before the name is stored."""
        record = ada.backup("  Nightly db  ")
        assert record["name"] == "Nightly db"
        assert ada.read(record["id"])["name"] == "Nightly db"

    def test_accepts_a_name_of_one_hundred_characters(self, ada: Tenant) -> None:
        """100 characters after trimming is the longest name accepted."""
        assert ada.backup(" " + "n" * 100 + " ")["name"] == "n" * 100

    @pytest.mark.parametrize("kind", ["Cloud", "s3", "", "remote", 1, None, ["local"]])
    def test_refuses_a_kind_outside_its_set(self, ada: Tenant, kind: Any) -> None:
        """A kind that is not local, manual or cloud is 400 naming ``kind``."""
        assert_error(ada.create({"name": "Nightly", "kind": kind}), 400, "invalid_request", "kind")
        assert ada.list().json()["data"] == []

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            ({"kind": "manual"}, "missing field: name"),
            ({"name": "Nightly"}, "missing field: kind"),
            ({"name": "Nightly", "kind": "manual", "schedule": None}, "unknown field: schedule"),
            ({"name": 7, "kind": "manual"}, "name"),
            ({"name": "", "kind": "manual"}, "name"),
            ({"name": "   ", "kind": "manual"}, "name"),
            ({"name": "n" * 101, "kind": "manual"}, "name"),
            ({"name": "bad\x07name", "kind": "manual"}, "control"),
        ],
    )
    def test_refuses_a_malformed_body(self, ada: Tenant, body: Any, fragment: str) -> None:
        """Missing, unknown or mistyped fields and bad names are 400 and create nothing."""
        assert_error(ada.create(body), 400, "invalid_request", fragment)
        assert ada.list().json()["data"] == []

    @pytest.mark.parametrize(
        ("content", "content_type", "fragment"),
        [
            (b'{"name": "Nightly", "kind": "manual"}', "text/plain", "Content-Type"),
            (b'{"name": "Nightly", "kind": "manual"}', None, "Content-Type"),
            (NOT_JSON, "application/json", "JSON"),
            (b'["Nightly", "manual"]', "application/json", "object"),
            (b"", "application/json", "body"),
        ],
    )
    def test_refuses_a_body_that_is_not_a_json_object(
        self, ada: Tenant, content: bytes, content_type: str | None, fragment: str
    ) -> None:
        """The body must be a JSON object sent as ``application/json``."""
        headers = dict(ada.headers)
        if content_type is not None:
            headers["Content-Type"] = content_type
        response = ada.api.client.post(ada.backups_path, content=content, headers=headers)
        assert_error(response, 400, "invalid_request", fragment)

    def test_accepts_a_utf8_charset_suffix(self, ada: Tenant) -> None:
        """``application/json; charset=utf-8`` is a JSON content type."""
        response = ada.api.client.post(
            ada.backups_path,
            content=json.dumps({"name": "Nightly", "kind": "manual"}).encode(),
            headers={**ada.headers, "Content-Type": "application/json; charset=utf-8"},
        )
        assert response.status_code == 201, response.text


class TestQuota:
    """``backups_per_workspace`` in the order of checks (the quota's rule:
    ``tests/usecases/test_backups.py::TestCreate``)."""

    def test_quota_is_checked_before_the_name(self, ada: Tenant) -> None:
        """A full workspace answers ``quota_exceeded`` even for a duplicate name."""
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        ada.backup("Nightly")
        assert_error(ada.create({"name": "Nightly", "kind": "manual"}), 409, "quota_exceeded")


class TestIdempotency:
    """``Idempotency-Key`` on backup creation (contract section 8)."""

    def test_a_replay_returns_the_first_response(self, ada: Tenant) -> None:
        """Same key and body: the first status and body, the replay's own request id."""
        body = {"name": "Nightly", "kind": "cloud"}
        first = ada.create(body, {"Idempotency-Key": "create-nightly"})
        again = ada.create(body, {"Idempotency-Key": "create-nightly", "X-Request-ID": "replay-2"})
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()
        assert again.headers["x-request-id"] == "replay-2"
        assert [b["id"] for b in ada.list().json()["data"]] == [first.json()["id"]]

    def test_a_different_body_with_the_same_key_conflicts(self, ada: Tenant) -> None:
        """Reusing a key for another request is 409 ``idempotency_conflict``; nothing is made."""
        ada.create({"name": "Nightly", "kind": "cloud"}, {"Idempotency-Key": "k-1"})
        response = ada.create({"name": "Weekly", "kind": "cloud"}, {"Idempotency-Key": "k-1"})
        assert_error(response, 409, "idempotency_conflict")
        assert [b["name"] for b in ada.list().json()["data"]] == ["Nightly"]

    def test_without_a_key_a_repeat_is_a_new_request(self, ada: Tenant) -> None:
        """Without the header the repeat is refused as a duplicate name."""
        ada.backup("Nightly")
        assert_error(ada.create({"name": "Nightly", "kind": "manual"}), 409, "name_taken")

    def test_refuses_a_key_over_255_characters(self, ada: Tenant) -> None:
        """An ``Idempotency-Key`` longer than 255 characters is 400; 255 is accepted."""
        body = {"name": "Nightly", "kind": "manual"}
        assert_error(
            ada.create(body, {"Idempotency-Key": "k" * 256}),
            400,
            "invalid_request",
            "Idempotency-Key",
        )
        assert ada.create(body, {"Idempotency-Key": "k" * 255}).status_code == 201
