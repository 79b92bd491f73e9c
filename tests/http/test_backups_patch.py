"""HTTP tests of the shape of ``PATCH /v1/backups/{bid}``: every malformed field is 400
naming it, endpoints, credential shapes, and write-only credentials on the wire."""

from __future__ import annotations

import logging
from typing import Any
from uuid import uuid4

import pytest

from support.backups_http import (
    CLOUD_COMPLETE,
    CUSTOMER_S3,
    DESTINATION_CREDENTIALS,
    NOT_JSON,
    PG_CREDENTIALS,
    PG_SOURCE,
    RECORD_FIELDS,
    RETENTION,
    S3_CREDENTIALS,
    S3_SOURCE,
    SCHEDULE,
    Tenant,
)
from support.checks import assert_error


class TestPatchBody:
    """The shape of a PATCH body: every refusal is 400 naming the field, and changes nothing."""

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            ({"kind": "cloud"}, "kind"),
            ({"kind": "manual"}, "kind"),
            ({"name": "Weekly", "kind": "manual"}, "kind"),
            ({"worker": str(uuid4())}, "worker"),
            ({"state": "active"}, "state"),
            ({"paused": True}, "paused"),
            ({"name": 5}, "name"),
            ({"name": None}, "name"),
            ({"name": ""}, "name"),
            ({"name": "   "}, "name"),
            ({"name": "n" * 101}, "name"),
            ({"name": "tab\tinside"}, "control"),
            ({"source": "s3"}, "source"),
            ({"source": None}, "source"),
            ({"source": {}}, "source.type"),
            ({"source": {"type": 3}}, "source.type"),
            ({"source": {"type": ""}}, "source.type"),
            ({"source": {**S3_SOURCE, "endpoint": "ftp://s3.example.com"}}, "source.endpoint"),
            ({"source": {**S3_SOURCE, "endpoint": "s3.example.com"}}, "source.endpoint"),
            ({"source": {**S3_SOURCE, "endpoint": 443}}, "source.endpoint"),
            ({"source": {**S3_SOURCE, "bucket": ""}}, "source.bucket"),
            ({"source": {**S3_SOURCE, "bucket": ["a"]}}, "source.bucket"),
            ({"source": {**S3_SOURCE, "bucket": "b"}}, "source.bucket"),
            ({"source": {**S3_SOURCE, "bucket": "My_Backups"}}, "source.bucket"),
            ({"source": {**S3_SOURCE, "bucket": "192.168.1.10"}}, "source.bucket"),
            ({"source": {**S3_SOURCE, "prefix": 1}}, "source.prefix"),
            ({"source": {**S3_SOURCE, "region": "eu"}}, "unknown field: source.region"),
            ({"source": {"type": "s3", "bucket": "bucket-b"}}, "missing field: source.endpoint"),
            ({"source": {**PG_SOURCE, "port": "5432"}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": True}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": 5432.5}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": 0}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": 65536}}, "source.port"),
            ({"source": {**PG_SOURCE, "host": ""}}, "source.host"),
            ({"source": {**PG_SOURCE, "database": None}}, "source.database"),
            ({"source": {**PG_SOURCE, "prefix": "x"}}, "unknown field: source.prefix"),
            ({"source": {"type": "postgres", "host": "h", "port": 1}}, "source.database"),
            ({"credentials": "secret"}, "credentials"),
            ({"credentials": None}, "credentials"),
            ({"credentials": ["a", "b"]}, "credentials"),
            ({"credentials": {"username": "u", "password": 5}}, "credentials.password"),
            ({"schedule": "daily"}, "schedule"),
            ({"schedule": {"cron": "0 3 * * *"}}, "missing field: schedule.timezone"),
            ({"schedule": {**SCHEDULE, "jitter": 5}}, "unknown field: schedule.jitter"),
            ({"schedule": {**SCHEDULE, "cron": 3}}, "schedule.cron"),
            ({"schedule": {**SCHEDULE, "cron": "every night"}}, "schedule.cron"),
            ({"schedule": {**SCHEDULE, "cron": "0 3 * * * *"}}, "schedule.cron"),
            ({"schedule": {**SCHEDULE, "cron": "61 3 * * *"}}, "schedule.cron"),
            ({"schedule": {**SCHEDULE, "cron": "@daily"}}, "schedule.cron"),
            ({"schedule": {**SCHEDULE, "timezone": "Mars/Olympus"}}, "schedule.timezone"),
            ({"schedule": {**SCHEDULE, "timezone": "CET+1"}}, "schedule.timezone"),
            ({"schedule": {**SCHEDULE, "timezone": ""}}, "schedule.timezone"),
            ({"schedule": {**SCHEDULE, "timezone": "America"}}, "schedule.timezone"),
            ({"schedule": {**SCHEDULE, "timezone": "z" * 300}}, "schedule.timezone"),
            ({"schedule": {**SCHEDULE, "cron": "0 0 30 2 *"}}, "schedule.cron"),
            ({"worker_id": "not-a-uuid"}, "worker_id"),
            ({"worker_id": 5}, "worker_id"),
            ({"worker_id": None}, "worker_id"),
            ({"retention": None}, "retention"),
            ({"retention": "P30D"}, "retention"),
            ({"retention": {"expire_after": "P30D"}}, "missing field: retention.lock_for"),
            ({"retention": {**RETENTION, "kept": 3}}, "unknown field: retention.kept"),
            ({"retention": {**RETENTION, "keep": 3}}, "retention.keep"),
            (
                {"retention": {**RETENTION, "keep": {"dayly": 3}}},
                "unknown field: retention.keep.dayly",
            ),
            ({"retention": {**RETENTION, "expire_after": "P1M"}}, "retention.expire_after"),
            ({"retention": {**RETENTION, "expire_after": "P1Y"}}, "retention.expire_after"),
            ({"retention": {**RETENTION, "lock_for": "P1M"}}, "retention.lock_for"),
            ({"retention": {**RETENTION, "expire_after": "30 days"}}, "retention.expire_after"),
            ({"retention": {**RETENTION, "expire_after": "P1.5D"}}, "retention.expire_after"),
            ({"retention": {**RETENTION, "expire_after": 30}}, "retention.expire_after"),
            ({"retention": {"expire_after": "PT0S", "lock_for": "PT0S"}}, "expire_after"),
            ({"destination": None}, "destination"),
            ({"destination": "service"}, "destination"),
            ({"destination": {"type": "gcs"}}, "destination.type"),
            ({"destination": {"type": "service", "bucket": "bucket-b"}}, "destination.bucket"),
            ({"destination": {**CUSTOMER_S3, "endpoint": "nope"}}, "destination.endpoint"),
            ({"destination": {"type": "customer_s3", "endpoint": "https://x"}}, "bucket"),
            ({"destination_credentials": None}, "destination_credentials"),
            ({"destination_credentials": [1]}, "destination_credentials"),
        ],
    )
    def test_refuses_a_malformed_field(self, ada: Tenant, body: Any, fragment: str) -> None:
        """Unknown fields (``kind`` among them), wrong types and bad values are 400."""
        before = ada.backup("Nightly", "cloud")
        assert_error(ada.patch(before["id"], body), 400, "invalid_request", fragment)
        assert ada.read(before["id"]) == before

    def test_kind_is_named_as_immutable(self, ada: Tenant) -> None:
        """The refusal of ``kind`` says that a backup's kind cannot be changed."""
        record = ada.backup()
        assert_error(ada.patch(record["id"], {"kind": "cloud"}), 400, "invalid_request", "kind")
        assert ada.read(record["id"])["kind"] == "manual"

    @pytest.mark.parametrize(
        ("content", "content_type", "fragment"),
        [
            (b'{"name": "Weekly"}', "text/plain", "Content-Type"),
            (b'{"name": "Weekly"}', None, "Content-Type"),
            (NOT_JSON, "application/json", "JSON"),
            (b'[{"name": "Weekly"}]', "application/json", "object"),
            (b'{"name": "a", "name": "b"}', "application/json", "duplicate"),
            (b"", "application/json", "body"),
        ],
    )
    def test_refuses_a_body_that_is_not_a_json_object(
        self, ada: Tenant, content: bytes, content_type: str | None, fragment: str
    ) -> None:
        """A PATCH needs a JSON object body sent as ``application/json``."""
        record = ada.backup()
        headers = dict(ada.headers)
        if content_type is not None:
            headers["Content-Type"] = content_type
        response = ada.api.client.patch(
            f"/v1/backups/{record['id']}", content=content, headers=headers
        )
        assert_error(response, 400, "invalid_request", fragment)
        assert ada.read(record["id"]) == record

    def test_an_empty_object_changes_nothing(self, ada: Tenant) -> None:
        """``{}`` is a PATCH that mentions no field: 200 with the backup unchanged."""
        record = ada.backup()
        assert ada.patched(record["id"], {}) == record

    def test_renames_with_the_name_trimmed(self, ada: Tenant) -> None:
        """``name`` may change; it is stored trimmed and returned in the whole backup."""
        record = ada.backup("Nightly")
        patched = ada.patched(record["id"], {"name": "  Weekly  "})
        assert set(patched) == RECORD_FIELDS
        assert patched["name"] == "Weekly"
        assert ada.read(record["id"])["name"] == "Weekly"

    @pytest.mark.parametrize(
        ("source", "shown"),
        [
            (S3_SOURCE, {**S3_SOURCE, "prefix": None}),
            ({**S3_SOURCE, "prefix": "daily/"}, {**S3_SOURCE, "prefix": "daily/"}),
            ({**S3_SOURCE, "prefix": None}, {**S3_SOURCE, "prefix": None}),
            (
                {**S3_SOURCE, "endpoint": "http://10.0.0.5:9000"},
                {**S3_SOURCE, "endpoint": "http://10.0.0.5:9000", "prefix": None},
            ),
            (PG_SOURCE, PG_SOURCE),
            ({**PG_SOURCE, "port": 65535}, {**PG_SOURCE, "port": 65535}),
            ({**PG_SOURCE, "port": 1}, {**PG_SOURCE, "port": 1}),
        ],
    )
    def test_accepts_each_source_shape(
        self, ada: Tenant, source: dict[str, Any], shown: dict[str, Any]
    ) -> None:
        """s3 and postgres sources are stored and returned as sent (prefix null when absent)."""
        record = ada.backup("Nightly", "cloud")
        assert ada.patched(record["id"], {"source": source})["source"] == shown
        assert ada.read(record["id"])["source"] == shown

    def test_customer_destination_and_back(self, ada: Tenant) -> None:
        """A customer_s3 destination with its credentials is stored; ``service`` restores it."""
        record = ada.backup("Nightly", "manual")
        patched = ada.patched(
            record["id"],
            {"destination": CUSTOMER_S3, "destination_credentials": DESTINATION_CREDENTIALS},
        )
        assert patched["destination"] == CUSTOMER_S3
        assert ada.read(record["id"])["destination"] == CUSTOMER_S3
        restored = ada.patched(record["id"], {"destination": {"type": "service"}})
        assert restored["destination"] == {"type": "service"}


class TestEndpoints:
    """Contract 10: an ``endpoint`` that is not an http(s) URL is 400, wherever a body names
    one (a source or a destination), and never a 500."""

    @pytest.mark.parametrize(
        "endpoint",
        [
            "https://[::1",
            "http://[x",
            "http://[x]",
            "http://[::1]x",
            "https://[::1]:",
            "https://host:abc",
            "https://host:99999",
            "https://host:0",
            "https://host:-1",
            "https://user:secret@host",
            "https://ex ample.com",
            "https://host\n.example",
        ],
    )
    @pytest.mark.parametrize("field", ["source", "destination"])
    def test_a_malformed_endpoint_is_400(self, ada: Tenant, field: str, endpoint: str) -> None:
        """Unbalanced or invalid IPv6 brackets, a port that is not a number in 1..65535, a
        user part or whitespace: 400 ``invalid_request`` naming the field; nothing changes."""
        kind, location = ("cloud", S3_SOURCE) if field == "source" else ("manual", CUSTOMER_S3)
        record = ada.backup("Nightly", kind)
        body: dict[str, Any] = {field: {**location, "endpoint": endpoint}}
        if field == "destination":
            body["destination_credentials"] = DESTINATION_CREDENTIALS
        response = ada.patch(record["id"], body)
        assert_error(response, 400, "invalid_request", f"{field}.endpoint")
        assert "secret" not in response.text
        assert ada.read(record["id"]) == record

    @pytest.mark.parametrize(
        "endpoint",
        ["http://[fd00::1]:9000", "https://[2a05:d018::5]", "https://s3.example.com", "http://h/p"],
    )
    def test_a_well_formed_endpoint_is_kept(self, ada: Tenant, endpoint: str) -> None:
        """IPv6 literals in brackets, explicit ports and paths are URLs like any other."""
        record = ada.backup("Nightly", "cloud")
        patched = ada.patched(record["id"], {"source": {**S3_SOURCE, "endpoint": endpoint}})
        assert patched["source"]["endpoint"] == endpoint


class TestCredentialShapes:
    """Contract 10: credentials are ``{access_key_id, secret_access_key}`` or ``{username,
    password}`` (``destination_credentials`` only the former); a missing or unknown key is
    a malformed body, 400 ``invalid_request``, checked with the other 400s: before the
    backup is looked up and before every kind rule."""

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            (
                {"source": PG_SOURCE, "credentials": {"user": "app", "password": "pw"}},
                "unknown field: credentials.user",
            ),
            ({"source": PG_SOURCE, "credentials": {"username": "app"}}, "credentials.password"),
            (
                {"source": S3_SOURCE, "credentials": {"access_key_id": "only-the-id"}},
                "missing field: credentials.secret_access_key",
            ),
            (
                {"source": S3_SOURCE, "credentials": {**S3_CREDENTIALS, "session_token": "t"}},
                "unknown field: credentials.session_token",
            ),
            ({"credentials": {"access_key_id": "a", "password": "p"}}, "credentials"),
            ({"credentials": {}}, "credentials"),
            (
                {"destination": CUSTOMER_S3, "destination_credentials": PG_CREDENTIALS},
                "unknown field: destination_credentials.password",
            ),
            (
                {"destination": CUSTOMER_S3, "destination_credentials": {"access_key_id": "a"}},
                "missing field: destination_credentials.secret_access_key",
            ),
        ],
    )
    @pytest.mark.parametrize("kind", ["cloud", "local", "manual"])
    def test_a_credentials_object_of_no_known_shape_is_400(
        self, ada: Tenant, kind: str, body: dict[str, Any], fragment: str
    ) -> None:
        """Whatever the backup's kind (a 400 outranks the 422 a local or manual backup
        would give for credentials at all), and nothing changes."""
        before = ada.backup("Nightly", kind)
        assert_error(ada.patch(before["id"], body), 400, "invalid_request", fragment)
        assert ada.read(before["id"]) == before

    def test_the_shape_is_checked_before_the_backup_is_looked_up(self, ada: Tenant) -> None:
        """Contract 1's order: a malformed body (400) before an unknown backup (404)."""
        response = ada.patch(str(uuid4()), {"credentials": {"user": "app"}})
        assert_error(response, 400, "invalid_request", "credentials.user")

    def test_credentials_sent_alone_need_a_known_shape(self, ada: Tenant) -> None:
        """Sent without a source: a malformed object is 400; one of the stored source's
        shape is stored (the 422 of the other shape is in ``TestKindRules``)."""
        record = ada.backup("Nightly", "cloud")
        ada.patched(record["id"], {"source": PG_SOURCE})
        assert_error(
            ada.patch(record["id"], {"credentials": {"user": "app", "password": "pw"}}),
            400,
            "invalid_request",
            "credentials.user",
        )
        assert ada.patched(record["id"], {"credentials": PG_CREDENTIALS})["has_credentials"]


class TestCredentials:
    """Credentials are write-only: never returned, never audited."""

    @pytest.mark.parametrize(
        ("source", "credentials"), [(S3_SOURCE, S3_CREDENTIALS), (PG_SOURCE, PG_CREDENTIALS)]
    )
    def test_no_secret_is_ever_shown(
        self,
        ada: Tenant,
        caplog: pytest.LogCaptureFixture,
        source: dict[str, Any],
        credentials: dict[str, str],
    ) -> None:
        """``has_credentials`` tells they are stored; no secret is in a response, event or log."""
        caplog.set_level(logging.DEBUG)
        record = ada.backup("Nightly", "cloud")
        patched = ada.patch(
            record["id"],
            {
                "source": source,
                "credentials": credentials,
                "retention": RETENTION,
                "destination": CUSTOMER_S3,
                "destination_credentials": DESTINATION_CREDENTIALS,
            },
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["has_credentials"] is True
        assert patched.json()["state"] == "active"
        texts = {
            "patch": patched.text,
            "read": ada.get(record["id"]).text,
            "list": ada.list().text,
            "audit": ada.audit().text,
            "log": caplog.text,
        }
        secrets = [*credentials.values(), *DESTINATION_CREDENTIALS.values()]
        for where, text in texts.items():
            for secret in secrets:
                assert secret not in text, where
            assert '"credentials"' not in text, where
            assert '"destination_credentials"' not in text, where
        update = ada.audit(action="backup.update").json()["data"]
        assert len(update) == 1
        assert update[0]["changes"]["has_credentials"] == {"from": False, "to": True}

    def test_new_credentials_replace_the_old_ones(self, ada: Tenant) -> None:
        """Sending credentials again keeps ``has_credentials`` and shows neither secret."""
        record = ada.backup("Nightly", "cloud")
        ada.patched(record["id"], CLOUD_COMPLETE)
        rotated = {"access_key_id": "AKIA-NEW", "secret_access_key": "rotated-secret-0000"}
        response = ada.patch(record["id"], {"credentials": rotated})
        assert response.status_code == 200
        assert response.json()["has_credentials"] is True
        assert "rotated-secret-0000" not in response.text
        assert "rotated-secret-0000" not in ada.audit().text
