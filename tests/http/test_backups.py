"""HTTP tests of the backups endpoints (contract sections 1, 5 and 10).

Create, list, read, PATCH (body shape, kind rules, activation, write-once retention,
write-only credentials, schedules), pause and resume, delete, billing gates, quotas,
Idempotency-Key, and the contract's order of checks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import attrs
import httpx2
import pytest

from strongroom.domain.billing import BillingState
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
from support.checks import assert_error
from support.world import Api, bearer, make_client, make_facade

S3_SOURCE: dict[str, Any] = {
    "type": "s3",
    "endpoint": "https://s3.example.com:9000",
    "bucket": "prod-data",
}
S3_CREDENTIALS = {"access_key_id": "AKIA-ID-0d1e2f", "secret_access_key": "s3-secret-9f8e7d6c"}
PG_SOURCE: dict[str, Any] = {
    "type": "postgres",
    "host": "db.example.com",
    "port": 5432,
    "database": "app",
}
PG_CREDENTIALS = {"username": "backup-user", "password": "pg-secret-5a4b3c2d"}
CUSTOMER_S3: dict[str, Any] = {
    "type": "customer_s3",
    "endpoint": "https://minio.customer.example",
    "bucket": "vault",
    "prefix": "strongroom/",
}
DESTINATION_CREDENTIALS = {
    "access_key_id": "DEST-ID-77aa",
    "secret_access_key": "dest-secret-1q2w3e4r",
}
RETENTION = {"expire_after": "P30D", "lock_for": "P7D"}
SCHEDULE = {"cron": "0 3 * * *", "timezone": "Europe/Paris"}
RECORD_FIELDS = {
    "id",
    "workspace_id",
    "name",
    "kind",
    "state",
    "paused",
    "source",
    "has_credentials",
    "schedule",
    "worker_id",
    "retention",
    "destination",
    "next_run_at",
    "created_at",
    "updated_at",
}
CLOUD_COMPLETE = {"source": S3_SOURCE, "credentials": S3_CREDENTIALS, "retention": RETENTION}
NOT_JSON = b"{not json"


@attrs.frozen
class Tenant:
    """An admin's session scoped to their own workspace, with shortcuts for backup calls."""

    api: Api
    token: str
    workspace_id: UUID

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    @property
    def backups_path(self) -> str:
        return f"/v1/workspaces/{self.workspace_id}/backups"

    def create(self, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return self.api.client.post(
            self.backups_path, json=body, headers={**self.headers, **(headers or {})}
        )

    def backup(self, name: str = "Nightly", kind: str = "manual") -> dict[str, Any]:
        """Create a backup and return its record."""
        response = self.create({"name": name, "kind": kind})
        assert response.status_code == 201, response.text
        record: dict[str, Any] = response.json()
        return record

    def list(self, **params: str) -> httpx2.Response:
        return self.api.client.get(self.backups_path, params=params, headers=self.headers)

    def get(self, backup_id: str) -> httpx2.Response:
        return self.api.client.get(f"/v1/backups/{backup_id}", headers=self.headers)

    def read(self, backup_id: str) -> dict[str, Any]:
        response = self.get(backup_id)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def patch(self, backup_id: str, body: Any) -> httpx2.Response:
        return self.api.client.patch(f"/v1/backups/{backup_id}", json=body, headers=self.headers)

    def patched(self, backup_id: str, body: Any) -> dict[str, Any]:
        response = self.patch(backup_id, body)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def action(self, backup_id: str, verb: str, **options: Any) -> httpx2.Response:
        return self.api.client.post(
            f"/v1/backups/{backup_id}/{verb}",
            headers={**self.headers, **options.pop("headers", {})},
            **options,
        )

    def delete(self, backup_id: str) -> httpx2.Response:
        return self.api.client.delete(f"/v1/backups/{backup_id}", headers=self.headers)

    def audit(self, **params: str) -> httpx2.Response:
        response = self.api.client.get(
            f"/v1/workspaces/{self.workspace_id}/audit", params=params, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response

    def set_billing(self, state: BillingState) -> None:
        self.api.facade.workspaces.set_billing_state(self.workspace_id, state)


def tenant_of(api: Api, email: str, name: str = "Acme") -> Tenant:
    """A new workspace administered by ``email``."""
    token, workspace_id = api.workspace_admin(email, name)
    return Tenant(api, token, workspace_id)


def viewer_in(api: Api, workspace_id: UUID, email: str) -> tuple[str, UUID]:
    """A session of ``email`` scoped to ``workspace_id`` as a viewer (no ``backups:write``)."""
    token = api.person(email)
    user_id = UUID(api.client.get("/v1/me", headers=bearer(token)).json()["principal"]["id"])
    with api.facade.deps.uow() as uow:
        uow.memberships.add(
            Membership(workspace_id, user_id, "viewer", api.facade.deps.clock.now())
        )
        uow.commit()
    return api.switch(token, workspace_id), user_id


@pytest.fixture
def ada(api: Api) -> Tenant:
    """Ada administers the workspace Acme."""
    return tenant_of(api, "ada@example.com")


@pytest.fixture
def bob(api: Api) -> Tenant:
    """Bob administers another workspace, Globex."""
    return tenant_of(api, "bob@example.com", "Globex")


class FixedClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> FixedClock:
    """Wednesday 2030-01-02 12:00 UTC (Paris is UTC+1 in January)."""
    return FixedClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))


@pytest.fixture
def timed(clock: FixedClock) -> Iterator[Tenant]:
    """Ada's workspace in a service whose clock the test controls."""
    facade = make_facade(clock=clock)
    with make_client(facade) as client:
        yield tenant_of(Api(facade, client), "ada@example.com")


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

    @pytest.mark.parametrize("second", ["Nightly", "NIGHTLY", "  nightly "])
    def test_refuses_a_duplicate_name_case_insensitively(self, ada: Tenant, second: str) -> None:
        """A name already used in the workspace, in any case, is 409 ``name_taken``."""
        ada.backup("Nightly")
        assert_error(ada.create({"name": second, "kind": "cloud"}), 409, "name_taken")
        assert [b["name"] for b in ada.list().json()["data"]] == ["Nightly"]

    def test_the_same_name_is_free_in_another_workspace(self, ada: Tenant, bob: Tenant) -> None:
        """Names are unique per workspace only."""
        ada.backup("Nightly")
        assert bob.backup("Nightly")["workspace_id"] == str(bob.workspace_id)

    def test_is_audited(self, ada: Tenant) -> None:
        """A creation writes a ``backup.create`` event by the caller, naming the backup."""
        record = ada.backup("Nightly")
        events = ada.audit(action="backup.create").json()["data"]
        assert len(events) == 1
        event = events[0]
        me = ada.api.client.get("/v1/me", headers=ada.headers).json()["principal"]
        assert event["actor"] == me
        assert event["outcome"] == "success"
        assert event["target"] == {"type": "backup", "id": record["id"]}
        assert event["changes"]["name"] == {"from": None, "to": "Nightly"}


class TestQuota:
    """``backups_per_workspace`` is checked before a backup is created."""

    def test_refuses_the_backup_beyond_the_limit(self, ada: Tenant) -> None:
        """With a limit of 2, the third creation is 409 naming the resource and the limit."""
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 2
        )
        ada.backup("one")
        ada.backup("two")
        assert_error(
            ada.create({"name": "three", "kind": "manual"}),
            409,
            "quota_exceeded",
            "backups_per_workspace",
            "2",
        )
        assert len(ada.list().json()["data"]) == 2

    def test_a_deleted_backup_frees_its_place_and_its_name(self, ada: Tenant) -> None:
        """Deleting a backup lowers the usage and releases its name."""
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        first = ada.backup("Nightly")
        assert ada.delete(first["id"]).status_code == 204
        assert ada.backup("Nightly")["id"] != first["id"]

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


class TestList:
    """``GET /v1/workspaces/{wid}/backups``."""

    def test_lists_newest_first_in_the_envelope(self, ada: Tenant, bob: Tenant) -> None:
        """The list envelope holds only this workspace's backups, newest first."""
        names = ["first", "second", "third"]
        for name in names:
            ada.backup(name)
        bob.backup("elsewhere")
        response = ada.list()
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"data", "next_cursor"}
        assert body["next_cursor"] is None
        assert [b["name"] for b in body["data"]] == ["third", "second", "first"]
        assert all(set(b) == RECORD_FIELDS for b in body["data"])

    def test_an_empty_workspace_lists_nothing(self, ada: Tenant) -> None:
        """No backups: an empty page without a next cursor."""
        assert ada.list().json() == {"data": [], "next_cursor": None}

    @pytest.mark.parametrize("limit", [1, 2, 3, 7])
    def test_pages_have_no_duplicates_or_gaps(self, ada: Tenant, limit: int) -> None:
        """Following ``next_cursor`` visits every backup exactly once, newest first."""
        created = [ada.backup(f"backup {n}")["id"] for n in range(7)]
        seen: list[str] = []
        pages = 0
        params = {"limit": str(limit)}
        while True:
            body = ada.list(**params).json()
            pages += 1
            assert 1 <= len(body["data"]) <= limit
            seen.extend(b["id"] for b in body["data"])
            if body["next_cursor"] is None:
                break
            params = {"limit": str(limit), "cursor": body["next_cursor"]}
        assert seen == list(reversed(created))
        assert pages == -(-len(created) // limit)

    def test_pages_with_identical_creation_times(self, timed: Tenant) -> None:
        """Backups created at the same instant still page without duplicates or gaps."""
        created = {timed.backup(f"backup {n}")["id"] for n in range(5)}
        first = timed.list(limit="2").json()
        second = timed.list(limit="2", cursor=first["next_cursor"]).json()
        third = timed.list(limit="2", cursor=second["next_cursor"]).json()
        assert third["next_cursor"] is None
        seen = [b["id"] for page in (first, second, third) for b in page["data"]]
        assert len(seen) == 5
        assert set(seen) == created

    def test_defaults_to_fifty(self, ada: Tenant) -> None:
        """Without ``limit`` a page holds at most 50 backups."""
        for n in range(51):
            ada.backup(f"backup {n}")
        body = ada.list().json()
        assert len(body["data"]) == 50
        assert body["next_cursor"] is not None
        assert len(ada.list(cursor=body["next_cursor"]).json()["data"]) == 1

    @pytest.mark.parametrize(
        ("params", "fragment"),
        [
            ({"limit": "0"}, "limit"),
            ({"limit": "201"}, "limit"),
            ({"limit": "-1"}, "limit"),
            ({"limit": "ten"}, "limit"),
            ({"limit": ""}, "limit"),
            ({"cursor": "not-a-cursor"}, "cursor"),
            ({"cursor": ""}, "cursor"),
        ],
    )
    def test_refuses_a_bad_limit_or_cursor(
        self, ada: Tenant, params: dict[str, str], fragment: str
    ) -> None:
        """A limit outside 1..200 or a cursor this service did not issue is 400."""
        ada.backup()
        assert_error(ada.list(**params), 400, "invalid_request", fragment)

    def test_accepts_the_largest_limit(self, ada: Tenant) -> None:
        """``limit=200`` is accepted."""
        ada.backup()
        assert len(ada.list(limit="200").json()["data"]) == 1


class TestRead:
    """``GET /v1/backups/{bid}``."""

    def test_unknown_backup_is_not_found(self, ada: Tenant) -> None:
        """An id that names no backup is 404 ``not_found``."""
        assert_error(ada.get(str(uuid4())), 404, "not_found")

    def test_another_workspaces_backup_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """Bob cannot tell Ada's backup from one that does not exist."""
        record = ada.backup()
        theirs = bob.get(record["id"])
        assert_error(theirs, 404, "not_found")
        assert theirs.json()["error"]["message"] == bob.get(str(uuid4())).json()["error"]["message"]

    @pytest.mark.parametrize("raw", ["not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g"])
    def test_refuses_an_id_that_is_not_a_uuid(self, ada: Tenant, raw: str) -> None:
        """A malformed path id is 400 ``invalid_request`` naming it."""
        assert_error(ada.get(raw), 400, "invalid_request", "bid")

    def test_a_viewer_can_read(self, api: Api, ada: Tenant) -> None:
        """Reading needs only ``backups:read``, which a viewer holds."""
        record = ada.backup()
        token, _ = viewer_in(api, ada.workspace_id, "vera@example.com")
        got = api.client.get(f"/v1/backups/{record['id']}", headers=bearer(token))
        assert got.status_code == 200
        assert got.json() == record
        listed = api.client.get(ada.backups_path, headers=bearer(token))
        assert [b["id"] for b in listed.json()["data"]] == [record["id"]]


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
            ({"source": {**S3_SOURCE, "prefix": 1}}, "source.prefix"),
            ({"source": {**S3_SOURCE, "region": "eu"}}, "unknown field: source.region"),
            ({"source": {"type": "s3", "bucket": "b"}}, "missing field: source.endpoint"),
            ({"source": {**PG_SOURCE, "port": "5432"}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": True}}, "source.port"),
            ({"source": {**PG_SOURCE, "port": 5432.0}}, "source.port"),
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
            ({"retention": {**RETENTION, "keep": 3}}, "unknown field: retention.keep"),
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
            ({"destination": {"type": "service", "bucket": "b"}}, "destination.bucket"),
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

    def test_renaming_to_a_taken_name_conflicts(self, ada: Tenant) -> None:
        """Another backup's name, in any case, is 409 ``name_taken``; the own name is fine."""
        ada.backup("Nightly")
        weekly = ada.backup("Weekly")
        assert_error(ada.patch(weekly["id"], {"name": "NIGHTLY"}), 409, "name_taken")
        assert ada.read(weekly["id"])["name"] == "Weekly"
        assert ada.patched(weekly["id"], {"name": "WEEKLY"})["name"] == "WEEKLY"

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


class TestSchedule:
    """``next_run_at`` is set only while a backup is active, scheduled and not paused."""

    @pytest.mark.parametrize(
        "cron",
        [
            "0 0 L * *",
            "0 0 ? * *",
            "0 0 15W * *",
            "0 0 * * 1#2",
            "*/60 * * * *",
            "*/500 * * * *",
            "0 0 1-31/40 * *",
            "5/15 * * * *",
            "0 0 * * 5-1",
        ],
    )
    def test_cron_beyond_the_contracts_grammar_is_400(self, timed: Tenant, cron: str) -> None:
        """Contract 13: ``L``, ``?``, ``W``, ``#``, steps beyond the field's range (and the
        other non-standard forms croniter takes) are 400 ``invalid_request``; nothing is
        stored."""
        record = timed.backup("Nightly", "cloud")
        response = timed.patch(record["id"], {"schedule": {"cron": cron, "timezone": "UTC"}})
        assert_error(response, 400, "invalid_request", "schedule.cron")
        assert timed.read(record["id"]) == record

    def test_cron_names_and_steps_within_range_are_accepted(self, timed: Tenant) -> None:
        """English month and weekday names, lists, ranges and steps are kept as sent."""
        record = timed.backup("Nightly", "cloud")
        schedule = {"cron": "*/30 9-17 * jan-jun/2 MON-FRI", "timezone": "UTC"}
        assert timed.patched(record["id"], {"schedule": schedule})["schedule"] == schedule

    def test_a_draft_has_no_next_run(self, timed: Tenant) -> None:
        """A schedule on a draft is stored but nothing is planned."""
        record = timed.backup("Nightly", "cloud")
        patched = timed.patched(record["id"], {"schedule": SCHEDULE})
        assert patched["schedule"] == SCHEDULE
        assert patched["state"] == "draft"
        assert patched["next_run_at"] is None

    def test_activation_plans_the_next_run(self, timed: Tenant) -> None:
        """03:00 in Paris (UTC+1 in January) after 12:00 UTC is 02:00 UTC the next day."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {"schedule": SCHEDULE})
        active = timed.patched(record["id"], CLOUD_COMPLETE)
        assert active["state"] == "active"
        assert active["next_run_at"] == "2030-01-03T02:00:00.000Z"
        assert timed.read(record["id"])["next_run_at"] == "2030-01-03T02:00:00.000Z"

    def test_a_schedule_in_the_activating_patch(self, timed: Tenant) -> None:
        """Schedule and completion in one PATCH give a next run at once."""
        record = timed.backup("Nightly", "cloud")
        body = {**CLOUD_COMPLETE, "schedule": {"cron": "30 * * * *", "timezone": "UTC"}}
        assert timed.patched(record["id"], body)["next_run_at"] == "2030-01-02T12:30:00.000Z"

    def test_clearing_the_schedule_clears_the_next_run(self, timed: Tenant) -> None:
        """``schedule: null`` removes the schedule and the planned run."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {**CLOUD_COMPLETE, "schedule": SCHEDULE})
        cleared = timed.patched(record["id"], {"schedule": None})
        assert cleared["schedule"] is None
        assert cleared["next_run_at"] is None
        assert cleared["state"] == "active"

    def test_pause_stops_planning_and_resume_plans_again(
        self, timed: Tenant, clock: FixedClock
    ) -> None:
        """Paused: no next run, state kept; resumed later: the next run after that moment."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {**CLOUD_COMPLETE, "schedule": SCHEDULE})
        clock.moment += timedelta(hours=1)
        paused = timed.action(record["id"], "pause")
        assert paused.status_code == 200
        assert paused.json()["paused"] is True
        assert paused.json()["state"] == "active"
        assert paused.json()["next_run_at"] is None
        assert paused.json()["updated_at"] == "2030-01-02T13:00:00.000Z"
        clock.moment = datetime(2030, 1, 3, 5, 0, tzinfo=UTC)
        resumed = timed.action(record["id"], "resume").json()
        assert resumed["paused"] is False
        assert resumed["next_run_at"] == "2030-01-04T02:00:00.000Z"
        assert timed.read(record["id"]) == resumed

    def test_a_schedule_set_while_paused_plans_nothing(self, timed: Tenant) -> None:
        """A paused active backup keeps its schedule but no next run."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], CLOUD_COMPLETE)
        timed.action(record["id"], "pause")
        patched = timed.patched(record["id"], {"schedule": SCHEDULE})
        assert patched["schedule"] == SCHEDULE
        assert patched["next_run_at"] is None


class TestPauseResume:
    """``POST /v1/backups/{bid}/pause`` and ``/resume``."""

    def test_pause_on_a_draft_is_allowed(self, ada: Tenant) -> None:
        """A draft can be paused; it stays a draft."""
        record = ada.backup()
        response = ada.action(record["id"], "pause")
        assert response.status_code == 200
        assert set(response.json()) == RECORD_FIELDS
        assert response.json()["paused"] is True
        assert response.json()["state"] == "draft"
        assert ada.read(record["id"])["paused"] is True

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    def test_is_idempotent(self, ada: Tenant, verb: str) -> None:
        """Repeating the action returns the same backup and keeps its state."""
        record = ada.backup()
        ada.patched(record["id"], {"retention": RETENTION})
        first = ada.action(record["id"], verb)
        second = ada.action(record["id"], verb)
        assert first.status_code == second.status_code == 200
        assert first.json() == second.json()
        assert first.json()["paused"] is (verb == "pause")
        assert first.json()["state"] == "active"

    def test_resume_of_an_active_backup_is_not_an_error(self, ada: Tenant) -> None:
        """Resuming a backup that is not paused is 200 with it unchanged."""
        record = ada.backup()
        active = ada.patched(record["id"], {"retention": RETENTION})
        response = ada.action(record["id"], "resume")
        assert response.status_code == 200
        assert response.json() == active

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    @pytest.mark.parametrize(
        ("content", "content_type"),
        [
            (None, None),
            (b"", "text/plain"),
            (b"{}", "application/json"),
            (b"{}", "application/json; charset=utf-8"),
        ],
    )
    def test_the_body_is_optional(
        self, ada: Tenant, verb: str, content: bytes | None, content_type: str | None
    ) -> None:
        """No body (whatever the Content-Type), or ``{}``, is accepted."""
        record = ada.backup()
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = ada.action(record["id"], verb, content=content, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["paused"] is (verb == "pause")

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    @pytest.mark.parametrize(
        ("content", "content_type", "fragment"),
        [
            (b'{"force": true}', "application/json", "unknown field: force"),
            (b"{}", "text/plain", "Content-Type"),
            (b"{}", None, "Content-Type"),
            (NOT_JSON, "application/json", "JSON"),
            (b"[]", "application/json", "object"),
        ],
    )
    def test_refuses_a_bad_body(
        self,
        ada: Tenant,
        verb: str,
        content: bytes,
        content_type: str | None,
        fragment: str,
    ) -> None:
        """A body that is present must be ``{}`` as JSON; the backup is untouched."""
        record = ada.backup()
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = ada.action(record["id"], verb, content=content, headers=headers)
        assert_error(response, 400, "invalid_request", fragment)
        assert ada.read(record["id"]) == record

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    def test_unknown_backup_is_not_found(self, ada: Tenant, verb: str) -> None:
        """Pausing or resuming an id that names no backup is 404."""
        assert_error(ada.action(str(uuid4()), verb), 404, "not_found")

    def test_actions_are_audited(self, ada: Tenant) -> None:
        """Pause and resume write ``backup.pause`` and ``backup.resume`` events."""
        record = ada.backup()
        ada.action(record["id"], "pause")
        ada.action(record["id"], "resume")
        for action, after in (("backup.pause", True), ("backup.resume", False)):
            events = ada.audit(action=action).json()["data"]
            assert len(events) == 1
            assert events[0]["target"] == {"type": "backup", "id": record["id"]}
            assert events[0]["changes"]["paused"] == {"from": not after, "to": after}


class TestDelete:
    """``DELETE /v1/backups/{bid}``."""

    def test_deletes_then_the_backup_is_gone(self, ada: Tenant) -> None:
        """204 with no body; afterwards read, delete and PATCH are 404 and the list is empty."""
        record = ada.backup()
        response = ada.delete(record["id"])
        assert response.status_code == 204
        assert response.content == b""
        assert_error(ada.get(record["id"]), 404, "not_found")
        assert_error(ada.delete(record["id"]), 404, "not_found")
        assert_error(ada.patch(record["id"], {"name": "x"}), 404, "not_found")
        assert ada.list().json()["data"] == []

    def test_is_audited(self, ada: Tenant) -> None:
        """A deletion writes a ``backup.delete`` event naming the backup."""
        record = ada.backup()
        ada.delete(record["id"])
        events = ada.audit(action="backup.delete").json()["data"]
        assert len(events) == 1
        assert events[0]["target"] == {"type": "backup", "id": record["id"]}
        assert events[0]["outcome"] == "success"


class TestOtherWorkspaces:
    """An object of another workspace is 404 to every backup endpoint, and stays untouched."""

    @pytest.mark.parametrize(
        ("method", "suffix", "body"),
        [
            ("GET", "", None),
            ("PATCH", "", {"name": "Stolen"}),
            ("DELETE", "", None),
            ("POST", "/pause", None),
            ("POST", "/resume", None),
        ],
    )
    def test_another_workspaces_backup_is_not_found(
        self, ada: Tenant, bob: Tenant, method: str, suffix: str, body: Any
    ) -> None:
        """Bob's admin session gets 404 for Ada's backup; Ada's backup is unchanged."""
        record = ada.backup()
        response = bob.api.client.request(
            method, f"/v1/backups/{record['id']}{suffix}", json=body, headers=bob.headers
        )
        assert_error(response, 404, "not_found")
        assert ada.read(record["id"]) == record
        assert bob.list().json()["data"] == []


class TestBilling:
    """Billing gates configuration writes in ``blocked`` only; reads are never refused."""

    @pytest.mark.parametrize(
        "state",
        [BillingState.TRIAL, BillingState.ACTIVE, BillingState.WARNED, BillingState.STOPPED],
    )
    def test_configuration_changes_are_allowed(self, ada: Tenant, state: BillingState) -> None:
        """Create, PATCH, pause, resume and delete succeed outside ``blocked``."""
        ada.set_billing(state)
        record = ada.backup()
        assert ada.patched(record["id"], {"retention": RETENTION})["state"] == "active"
        assert ada.action(record["id"], "pause").json()["paused"] is True
        assert ada.action(record["id"], "resume").json()["paused"] is False
        assert ada.delete(record["id"]).status_code == 204

    def test_blocked_refuses_every_write_naming_the_state(self, ada: Tenant) -> None:
        """Blocked: every write is 409 ``billing_restricted`` naming the state; nothing changes."""
        record = ada.backup()
        ada.set_billing(BillingState.BLOCKED)
        refused = [
            ada.create({"name": "Weekly", "kind": "manual"}),
            ada.patch(record["id"], {"retention": RETENTION}),
            ada.patch(record["id"], {"name": "Renamed"}),
            ada.action(record["id"], "pause"),
            ada.action(record["id"], "resume"),
            ada.delete(record["id"]),
        ]
        for response in refused:
            assert_error(response, 409, "billing_restricted", "workspace billing state is blocked")
        assert ada.read(record["id"]) == record
        assert [b["id"] for b in ada.list().json()["data"]] == [record["id"]]

    def test_blocked_still_answers_404_before_billing(self, ada: Tenant) -> None:
        """An unknown backup is 404 even in a blocked workspace."""
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(str(uuid4()), {"name": "x"}), 404, "not_found")
        assert_error(ada.delete(str(uuid4())), 404, "not_found")

    def test_writes_resume_when_unblocked(self, ada: Tenant) -> None:
        """Leaving ``blocked`` allows writes again on the next request."""
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "n", "kind": "manual"}), 409, "billing_restricted")
        ada.set_billing(BillingState.ACTIVE)
        assert ada.create({"name": "n", "kind": "manual"}).status_code == 201


ROUTES = [
    ("POST", "/v1/workspaces/{wid}/backups"),
    ("GET", "/v1/workspaces/{wid}/backups"),
    ("GET", "/v1/backups/{bid}"),
    ("PATCH", "/v1/backups/{bid}"),
    ("DELETE", "/v1/backups/{bid}"),
    ("POST", "/v1/backups/{bid}/pause"),
    ("POST", "/v1/backups/{bid}/resume"),
]
WRITES = [
    ("POST", "/v1/workspaces/{wid}/backups", "backup.create"),
    ("PATCH", "/v1/backups/{bid}", "backup.update"),
    ("DELETE", "/v1/backups/{bid}", "backup.delete"),
    ("POST", "/v1/backups/{bid}/pause", "backup.pause"),
    ("POST", "/v1/backups/{bid}/resume", "backup.resume"),
]
JSON = {"Content-Type": "application/json"}


def call(
    api: Api, method: str, path: str, token: str | None, content: bytes = NOT_JSON
) -> httpx2.Response:
    """``method path`` with a malformed JSON body (so a body check would answer 400)."""
    headers = dict(JSON) if token is None else {**JSON, **bearer(token)}
    return api.client.request(method, path, content=content, headers=headers)


class TestOrderOfChecks:
    """Contract section 1: credential, path id, workspace, permission, body, 404, 422, 409."""

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    @pytest.mark.parametrize("token", [None, "bks_not-a-real-token"])
    def test_a_credential_comes_first(
        self, api: Api, method: str, template: str, token: str | None
    ) -> None:
        """No or a bad credential is 401, before the malformed path id and body."""
        path = template.format(wid="not-a-uuid", bid="not-a-uuid")
        assert_error(call(api, method, path, token), 401, "unauthenticated")

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    def test_a_malformed_path_id_comes_before_the_workspace(
        self, api: Api, method: str, template: str
    ) -> None:
        """A path id that is not a UUID is 400, even for a session with no workspace."""
        token = api.person("una@example.com")
        path = template.format(wid="not-a-uuid", bid="not-a-uuid")
        name = "wid" if "{wid}" in template else "bid"
        assert_error(call(api, method, path, token), 400, "invalid_request", name)

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    def test_a_workspace_must_be_selected(self, api: Api, method: str, template: str) -> None:
        """A session scoped to no workspace is 403 ``select a workspace first``."""
        token = api.person("una@example.com")
        path = template.format(wid=uuid4(), bid=uuid4())
        assert_error(call(api, method, path, token), 403, "forbidden", "select a workspace first")

    @pytest.mark.parametrize("method", ["POST", "GET"])
    def test_another_workspace_of_the_caller_is_wrong_workspace(
        self, api: Api, ada: Tenant, method: str
    ) -> None:
        """Ada is a member of a second workspace: naming it is 403 ``wrong_workspace``."""
        _, second = api.workspace_admin("ada@example.com", "Second")
        response = call(api, method, f"/v1/workspaces/{second}/backups", ada.token)
        assert_error(response, 403, "wrong_workspace")

    @pytest.mark.parametrize("method", ["POST", "GET"])
    def test_a_workspace_of_others_is_not_found(
        self, api: Api, ada: Tenant, bob: Tenant, method: str
    ) -> None:
        """A workspace Ada does not belong to is 404, like one that does not exist."""
        for wid in (bob.workspace_id, uuid4()):
            response = call(api, method, f"/v1/workspaces/{wid}/backups", ada.token)
            assert_error(response, 404, "not_found")

    @pytest.mark.parametrize(("method", "template", "action"), WRITES)
    def test_a_missing_permission_beats_a_bad_body_and_is_audited(
        self, api: Api, ada: Tenant, method: str, template: str, action: str
    ) -> None:
        """A viewer gets 403 naming ``backups:write``; the attempt is audited as denied."""
        record = ada.backup()
        token, viewer_id = viewer_in(api, ada.workspace_id, "vera@example.com")
        path = template.format(wid=ada.workspace_id, bid=record["id"])
        response = call(api, method, path, token)
        assert_error(response, 403, "forbidden", "missing permission backups:write")
        assert ada.read(record["id"]) == record
        denied = [
            event
            for event in ada.audit(action=action).json()["data"]
            if event["outcome"] == "denied"
        ]
        assert len(denied) == 1
        assert denied[0]["actor"] == {"type": "user", "id": str(viewer_id)}
        assert denied[0]["request_id"] == response.headers["x-request-id"]
        expected_target = None if action == "backup.create" else record["id"]
        assert denied[0]["target"] == {"type": "backup", "id": expected_target}

    @pytest.mark.parametrize(
        ("method", "suffix", "content"),
        [
            ("PATCH", "", b'{"kind": "cloud"}'),
            ("PATCH", "", NOT_JSON),
            ("POST", "/pause", b'{"now": true}'),
            ("POST", "/resume", NOT_JSON),
        ],
    )
    def test_a_bad_body_comes_before_an_unknown_backup(
        self, api: Api, ada: Tenant, method: str, suffix: str, content: bytes
    ) -> None:
        """The body is checked before the backup is looked up: 400, not 404."""
        path = f"/v1/backups/{uuid4()}{suffix}"
        assert_error(call(api, method, path, ada.token, content), 400, "invalid_request")

    def test_a_bad_create_body_comes_before_billing_and_quota(self, ada: Tenant) -> None:
        """A blocked, full workspace still answers 400 for a malformed creation."""
        ada.backup()
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "x"}), 400, "invalid_request", "kind")

    @pytest.mark.parametrize(
        "body",
        [
            {"worker_id": str(uuid4())},
            {"source": {"type": "ftp"}},
            {"schedule": SCHEDULE},
        ],
    )
    def test_an_unknown_backup_comes_before_the_kind_rules(
        self, ada: Tenant, body: dict[str, Any]
    ) -> None:
        """A well-formed PATCH of no backup is 404, whatever the kind rules would say."""
        assert_error(ada.patch(str(uuid4()), body), 404, "not_found")

    def test_kind_rules_come_before_billing(self, ada: Tenant) -> None:
        """A blocked workspace answers 422 for a PATCH its backup's kind refuses."""
        record = ada.backup("Nightly", "manual")
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(record["id"], {"schedule": SCHEDULE}), 422, "validation_failed")

    @pytest.mark.parametrize(
        "retention",
        [
            {"expire_after": "P1D", "lock_for": "P2D"},
            {"expire_after": "P2D", "lock_for": "P1D"},
        ],
    )
    def test_billing_comes_before_retention_conflicts(
        self, ada: Tenant, retention: dict[str, str]
    ) -> None:
        """Blocked: 409 ``billing_restricted`` before ``retention_immutable`` or the lock rule."""
        record = ada.backup("Nightly", "manual")
        ada.patched(record["id"], {"retention": RETENTION})
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(record["id"], {"retention": retention}), 409, "billing_restricted")

    def test_billing_comes_before_the_quota(self, ada: Tenant) -> None:
        """A blocked workspace at its quota answers ``billing_restricted``."""
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        ada.backup()
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "n", "kind": "manual"}), 409, "billing_restricted")
