"""HTTP tests of artifacts on local-disk storage and S3, end to end with real bytes
(contract sections 4, 6 and 10): upload-url, PUT to the presigned URL, confirm, list,
download-url, GET, delete's answers, the stores' own locks, and refusals of tampered,
expired or reused URLs. The rules (delete precedence, lock and expiry windows, billing
gates, the storage quota, the retention job, a worker's reach):
``tests/usecases/test_artifact_rules.py`` and ``tests/domain/test_artifact_windows.py``."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from uuid import UUID, uuid4

import attrs
import httpx2
import pytest
import uvicorn
from minio import Minio

from strongroom.adapters import resolver
from strongroom.adapters.http.app import app_for
from strongroom.adapters.runtime.blocking import blocking, unwrapped
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.storage.s3 import S3Storage
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.pagination import PageRequest
from strongroom.ports.driven.storage import ObjectLockedError, ObjectStorage
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.verification import VerificationReport
from support.checks import assert_error
from support.seaweed import SeaweedServer, s3_storage
from support.world import Api, bearer, make_client, make_facade

MIB = 1024 * 1024
# What tests pointing a customer destination at the session's SeaweedFS configure.
LOOPBACK_ALLOWED = EndpointPolicy.parse("127.0.0.0/8,::1/128")
ARTIFACT_FIELDS = {
    "id",
    "run_id",
    "backup_id",
    "name",
    "size",
    "sha256",
    "state",
    "storage",
    "created_at",
    "expires_at",
    "locked_until",
    "verification",
    "verified_at",
    "held",
}


class MovableClock:
    """The real time plus an offset a test moves."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.frozen
class Tenant:
    """A workspace admin with shortcuts for the data path."""

    api: Api
    token: str
    workspace_id: UUID

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    @property
    def client(self) -> Any:
        return self.api.client

    def backup(self, name: str = "Nightly", lock_for: str = "P7D", expire: str = "P30D") -> str:
        created = self.client.post(
            f"/v1/workspaces/{self.workspace_id}/backups",
            json={"name": name, "kind": "manual"},
            headers=self.headers,
        )
        assert created.status_code == 201, created.text
        backup_id: str = created.json()["id"]
        patched = self.client.patch(
            f"/v1/backups/{backup_id}",
            json={"retention": {"expire_after": expire, "lock_for": lock_for}},
            headers=self.headers,
        )
        assert patched.status_code == 200, patched.text
        return backup_id

    def run(self, backup_id: str) -> str:
        response = self.client.post("/v1/runs", json={"backup_id": backup_id}, headers=self.headers)
        assert response.status_code == 201, response.text
        run_id: str = response.json()["id"]
        return run_id

    def transfer(self, method: str, url: str, **options: Any) -> httpx2.Response:
        """A request to a presigned URL: the app's own for local disk, else real HTTP."""
        if url.startswith("http://testserver/"):
            response: httpx2.Response = self.client.request(method, url, **options)
            return response
        return httpx2.request(method, url, timeout=60, **options)

    def ask_upload(self, run_id: str, name: str, data: bytes) -> httpx2.Response:
        return self.client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": name, "size": len(data), "sha256": sha(data)},
            headers=self.headers,
        )

    def upload(self, run_id: str, name: str, data: bytes) -> str:
        """Announce and PUT a single-request artifact; its id."""
        answer = self.ask_upload(run_id, name, data)
        assert answer.status_code == 201, answer.text
        plan = answer.json()
        put = self.transfer("PUT", plan["url"], content=data, headers=plan["headers"])
        assert put.status_code == 200, put.text
        artifact_id: str = plan["artifact_id"]
        return artifact_id

    def confirm(self, run_id: str) -> httpx2.Response:
        return self.client.post(f"/v1/runs/{run_id}/confirm", headers=self.headers)

    def stored(self, backup_id: str, name: str, data: bytes) -> str:
        """A confirmed artifact in a new run of ``backup_id``; its id."""
        run_id = self.run(backup_id)
        artifact_id = self.upload(run_id, name, data)
        assert self.confirm(run_id).status_code == 200
        return artifact_id

    def artifacts(self, **params: str) -> list[dict[str, Any]]:
        response = self.client.get(
            f"/v1/workspaces/{self.workspace_id}/artifacts", params=params, headers=self.headers
        )
        assert response.status_code == 200, response.text
        data: list[dict[str, Any]] = response.json()["data"]
        return data

    def download_url(self, artifact_id: str) -> httpx2.Response:
        return self.client.post(f"/v1/artifacts/{artifact_id}/download-url", headers=self.headers)

    def delete(self, artifact_id: str) -> httpx2.Response:
        return self.client.delete(f"/v1/artifacts/{artifact_id}", headers=self.headers)

    def usage(self) -> int:
        quotas = self.client.get(
            f"/v1/workspaces/{self.workspace_id}/quotas", headers=self.headers
        ).json()["data"]
        (storage,) = [q for q in quotas if q["resource"] == "storage_bytes"]
        usage: int = storage["usage"]
        return usage


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


def local_storage(tmp_path: Path, clock: MovableClock) -> LocalDiskStorage:
    return LocalDiskStorage(tmp_path / "objects", b"signing key", clock=clock.now)


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path, clock: MovableClock) -> ObjectStorage:
    """Each storage in turn, behind a blocking view: local disk, and S3 on the session's
    SeaweedFS."""
    if request.param == "local":
        return blocking(local_storage(tmp_path, clock))
    return blocking(s3_storage(request.getfixturevalue("seaweed")))


class LocalOnly:
    """Tests of what only the local-disk storage does (its URLs, or the service clock
    deciding locks that S3 keeps by the real time)."""

    @pytest.fixture
    def storage(self, tmp_path: Path, clock: MovableClock) -> ObjectStorage:
        return blocking(local_storage(tmp_path, clock))


@pytest.fixture
def data_facade(storage: ObjectStorage, clock: MovableClock) -> Strongroom:
    return make_facade(clock=clock, storage=storage)


@pytest.fixture
def data_api(data_facade: Strongroom) -> Iterator[Api]:
    with make_client(data_facade) as client:
        yield Api(data_facade, client)


@pytest.fixture
def ada(data_api: Api) -> Tenant:
    token, workspace_id = data_api.workspace_admin("ada@example.com")
    return Tenant(data_api, token, workspace_id)


@pytest.fixture
def bob(data_api: Api) -> Tenant:
    token, workspace_id = data_api.workspace_admin("bob@example.com", "Globex")
    return Tenant(data_api, token, workspace_id)


def tamper(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


class TestSingleUpload:
    """The whole flow with one PUT."""

    def test_bytes_go_up_and_come_back_the_same(self, ada: Tenant) -> None:
        """upload-url, PUT, confirm, list, download-url, GET: the same sha256."""
        data = os.urandom(300_000)
        backup_id = ada.backup()
        run_id = ada.run(backup_id)
        answer = ada.ask_upload(run_id, "db.dump", data)
        assert answer.status_code == 201, answer.text
        plan = answer.json()
        assert set(plan) == {"artifact_id", "method", "url", "headers", "expires_at"}
        assert plan["method"] == "PUT"
        assert plan["url"].startswith(("http://testserver/storage/", "http://127.0.0.1:"))
        put = ada.transfer("PUT", plan["url"], content=data, headers=plan["headers"])
        assert put.status_code == 200, put.text
        confirmed = ada.confirm(run_id)
        assert confirmed.status_code == 200, confirmed.text
        run = confirmed.json()
        assert (run["state"], run["artifact_count"], run["bytes"]) == ("succeeded", 1, len(data))
        assert run["finished_at"] is not None
        (listed,) = ada.artifacts()
        assert set(listed) == ARTIFACT_FIELDS
        assert listed["id"] == plan["artifact_id"]
        assert (listed["state"], listed["storage"], listed["size"]) == (
            "available",
            "service",
            len(data),
        )
        assert listed["sha256"] == sha(data)
        created = datetime.fromisoformat(listed["created_at"])
        locked = datetime.fromisoformat(listed["locked_until"])
        expires = datetime.fromisoformat(listed["expires_at"])
        assert timedelta(days=6, hours=23) < locked - created <= timedelta(days=7, minutes=1)
        assert timedelta(days=29, hours=23) < expires - created <= timedelta(days=30, minutes=1)
        link = ada.download_url(plan["artifact_id"])
        assert link.status_code == 200, link.text
        assert set(link.json()) == {"method", "url", "expires_at"}
        got = ada.transfer("GET", link.json()["url"])
        assert got.status_code == 200
        assert sha(got.content) == sha(data)
        assert ada.usage() == len(data)

    def test_confirm_without_the_bytes_is_artifact_missing_and_changes_nothing(
        self, ada: Tenant
    ) -> None:
        """All-or-nothing: one missing artifact keeps every artifact pending, the run open."""
        run_id = ada.run(ada.backup())
        ada.upload(run_id, "a", b"first")
        assert ada.ask_upload(run_id, "b", b"second").status_code == 201
        assert_error(ada.confirm(run_id), 409, "artifact_missing", "b")
        assert {a["state"] for a in ada.artifacts()} == {"pending"}
        run = ada.client.get(f"/v1/runs/{run_id}", headers=ada.headers).json()
        assert run["state"] == "running"
        assert ada.usage() == 0

    def test_same_size_other_bytes_are_refused_by_the_store(self, ada: Tenant) -> None:
        """Integrity (contract 13): the URL is bound to the announced sha256 (on S3 the
        signed ``x-amz-checksum-sha256``, given in ``headers``), so the store refuses other
        bytes of the same size, and nothing becomes ``available`` with a wrong sha256."""
        data, other = os.urandom(4096), os.urandom(4096)
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "db.dump", data).json()
        if not plan["url"].startswith("http://testserver/"):
            digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
            assert plan["headers"]["x-amz-checksum-sha256"] == digest
        refused = ada.transfer("PUT", plan["url"], content=other, headers=plan["headers"])
        assert refused.status_code in (400, 403), refused.text
        assert_error(ada.confirm(run_id), 409, "artifact_missing", "db.dump")
        assert [a["state"] for a in ada.artifacts()] == ["pending"]
        unsigned = {k: v for k, v in plan["headers"].items() if k != "x-amz-checksum-sha256"}
        assert ada.transfer("PUT", plan["url"], content=other, headers=unsigned).status_code in (
            400,
            403,
        )
        assert_error(ada.confirm(run_id), 409, "artifact_missing", "db.dump")
        put = ada.transfer("PUT", plan["url"], content=data, headers=plan["headers"])
        assert put.status_code == 200, put.text
        assert ada.confirm(run_id).status_code == 200
        (listed,) = ada.artifacts()
        assert (listed["state"], listed["sha256"]) == ("available", sha(data))

    @pytest.mark.parametrize(
        "body",
        [
            {"name": "a", "size": -1, "sha256": "0" * 64},
            {"name": "a", "size": 1, "sha256": "xyz"},
            {"name": "", "size": 1, "sha256": "0" * 64},
            {"name": "a", "size": "1", "sha256": "0" * 64},
            {"name": "a", "size": 1},
            {"name": "a", "size": 1, "sha256": "0" * 64, "extra": 1},
        ],
    )
    def test_a_bad_body_is_invalid_request(self, ada: Tenant, body: dict[str, Any]) -> None:
        """Bad size or sha256, empty name, wrong type, missing or unknown field: 400."""
        run_id = ada.run(ada.backup())
        response = ada.client.post(f"/v1/runs/{run_id}/upload-url", json=body, headers=ada.headers)
        assert_error(response, 400, "invalid_request")

    def test_another_workspaces_run_and_artifact_are_not_found(
        self, ada: Tenant, bob: Tenant
    ) -> None:
        """404 for upload-url, confirm, download-url and delete across workspaces."""
        run_id = bob.run(bob.backup())
        artifact_id = bob.upload(run_id, "a", b"x")
        assert_error(ada.ask_upload(run_id, "a", b"x"), 404, "not_found")
        assert_error(ada.confirm(run_id), 404, "not_found")
        assert_error(ada.download_url(artifact_id), 404, "not_found")
        assert_error(ada.delete(artifact_id), 404, "not_found")
        assert_error(ada.ask_upload(str(uuid4()), "a", b"x"), 404, "not_found")


class TestPresignedUrls(LocalOnly):
    """The storage endpoint refuses what its signature does not cover."""

    def test_tampered_expired_and_reused_urls_are_refused(
        self, ada: Tenant, clock: MovableClock
    ) -> None:
        """Another size, another object, another method, an expired URL: 403 or 400."""
        run_id = ada.run(ada.backup())
        data = b"payload"
        first = ada.ask_upload(run_id, "a", data).json()
        second = ada.ask_upload(run_id, "b", data).json()
        url = first["url"]
        assert ada.client.put(tamper(url, size="3"), content=b"pay").status_code == 403
        other_object = url.replace(first["artifact_id"], second["artifact_id"])
        assert ada.client.put(other_object, content=data).status_code == 403
        assert ada.client.get(url).status_code == 403
        assert ada.client.put(url, content=b"wrong!!").status_code == 400
        assert ada.client.put(url, content=data + b"!").status_code == 400
        clock.offset = timedelta(minutes=16)
        expired = ada.client.put(url, content=data)
        assert expired.status_code == 403
        assert "expired" in expired.json()["error"]["message"]
        assert ada.client.put("http://testserver/storage/../../etc/passwd").status_code in (
            400,
            403,
            404,
        )

    def test_a_locked_object_cannot_be_overwritten_through_its_url(self, ada: Tenant) -> None:
        """Reusing the upload URL after confirmation: refused, the bytes stay."""
        data = b"original"
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "a", data).json()
        assert ada.client.put(plan["url"], content=data).status_code == 200
        assert ada.confirm(run_id).status_code == 200
        assert ada.client.put(plan["url"], content=data).status_code == 403
        link = ada.download_url(plan["artifact_id"]).json()["url"]
        assert ada.client.get(link).content == data


class TestOverwrite:
    """A confirmed, locked artifact keeps its bytes even if its upload URL is reused."""

    def test_download_serves_the_confirmed_bytes(self, ada: Tenant) -> None:
        """Local disk refuses the PUT; S3 keeps it as a newer version but downloads are
        pinned to the locked one."""
        data = b"original"
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "a", data).json()
        put = ada.transfer("PUT", plan["url"], content=data, headers=plan["headers"])
        assert put.status_code == 200
        assert ada.confirm(run_id).status_code == 200
        ada.transfer("PUT", plan["url"], content=b"replaced", headers=plan["headers"])
        link = ada.download_url(plan["artifact_id"]).json()["url"]
        assert ada.transfer("GET", link).content == data


class TestMultipart:
    """Artifacts from the threshold up go in parts, and resume."""

    def test_64_mib_in_parts_resumed_after_dropping_half(self, ada: Tenant) -> None:
        """Four parts of 16 MiB; two sent, ask again: those two listed; send the rest."""
        data = os.urandom(64 * MIB)
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "big.tar", data).json()
        assert set(plan) == {
            "artifact_id",
            "upload_id",
            "part_size",
            "parts",
            "stored_parts",
            "expires_at",
        }
        assert plan["part_size"] == 16 * MIB
        assert [p["number"] for p in plan["parts"]] == [1, 2, 3, 4]
        for part in plan["parts"][:2]:
            start = (part["number"] - 1) * plan["part_size"]
            chunk = data[start : start + part["size"]]
            assert ada.transfer("PUT", part["url"], content=chunk).status_code == 200
        assert_error(ada.confirm(run_id), 409, "artifact_missing")
        resumed = ada.ask_upload(run_id, "big.tar", data).json()
        assert resumed["artifact_id"] == plan["artifact_id"]
        assert resumed["upload_id"] == plan["upload_id"]
        assert resumed["stored_parts"] == [1, 2]
        for part in resumed["parts"]:
            if part["number"] in resumed["stored_parts"]:
                continue
            start = (part["number"] - 1) * resumed["part_size"]
            chunk = data[start : start + part["size"]]
            assert ada.transfer("PUT", part["url"], content=chunk).status_code == 200
        confirmed = ada.confirm(run_id)
        assert confirmed.status_code == 200, confirmed.text
        link = ada.download_url(plan["artifact_id"]).json()["url"]
        assert sha(ada.transfer("GET", link).content) == sha(data)


class TestVerification:
    """Contract 13: what the store did not check at confirm is re-read in the background;
    a mismatch is recorded, audited and counted in ``/metrics``."""

    @pytest.fixture
    def data_facade(self, storage: ObjectStorage, clock: MovableClock) -> Strongroom:
        return make_facade(clock=clock, storage=storage, multipart_threshold=1000)

    @staticmethod
    def send_parts(ada: Tenant, plan: dict[str, Any], data: bytes) -> None:
        for part in plan["parts"]:
            start = (part["number"] - 1) * plan["part_size"]
            chunk = data[start : start + part["size"]]
            assert ada.transfer("PUT", part["url"], content=chunk).status_code == 200

    @staticmethod
    def verify_events(ada: Tenant) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = ada.client.get(
            f"/v1/workspaces/{ada.workspace_id}/audit",
            params={"action": "artifact.verify"},
            headers=ada.headers,
        ).json()["data"]
        return events

    @staticmethod
    def mismatches_metric(ada: Tenant) -> float:
        text = ada.client.get("/metrics").text
        (line,) = [
            row
            for row in text.splitlines()
            if row.startswith("strongroom_artifact_verification_mismatches_total ")
        ]
        return float(line.split()[1])

    def test_a_single_request_upload_is_verified_at_confirm(self, ada: Tenant) -> None:
        """The store enforced the sha256 on the way in: ``ok`` from confirm on."""
        run_id = ada.run(ada.backup())
        ada.upload(run_id, "small", b"hello")
        (pending,) = ada.artifacts()
        assert (pending["verification"], pending["verified_at"]) == (None, None)
        confirmed = ada.confirm(run_id)
        assert confirmed.status_code == 200, confirmed.text
        (listed,) = ada.artifacts()
        assert listed["verification"] == "ok"
        assert listed["verified_at"] is not None
        assert ada.api.facade.verification.run().ok == 0

    def test_right_parts_are_verified_ok(self, ada: Tenant, storage: ObjectStorage) -> None:
        """S3 cannot tell a joined object's sha256: ``pending`` at confirm, then ``ok``
        once re-read (local disk hashes the join at confirm: ``ok`` at once)."""
        data = os.urandom(3000)
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "big", data).json()
        self.send_parts(ada, plan, data)
        assert ada.confirm(run_id).status_code == 200
        (listed,) = ada.artifacts()
        s3 = isinstance(unwrapped(storage), S3Storage)
        assert listed["state"] == "available"
        assert listed["verification"] == ("pending" if s3 else "ok")
        report = ada.api.facade.verification.run()
        assert (report.ok, report.mismatch) == ((1, 0) if s3 else (0, 0))
        (listed,) = ada.artifacts()
        assert listed["verification"] == "ok"
        assert listed["verified_at"] is not None
        assert len(self.verify_events(ada)) == (1 if s3 else 0)
        assert self.mismatches_metric(ada) == 0

    def test_same_size_other_parts_are_caught_in_the_background(
        self, ada: Tenant, storage: ObjectStorage
    ) -> None:
        """Parts of the right sizes and other bytes: on S3 confirm takes them (pending),
        the verifier marks ``mismatch``, audits it as ``system`` and ``/metrics`` counts
        it; local disk refuses them at confirm (409)."""
        data = os.urandom(3000)
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "big", data).json()
        self.send_parts(ada, plan, os.urandom(len(data)))
        if not isinstance(unwrapped(storage), S3Storage):
            assert_error(ada.confirm(run_id), 409, "artifact_missing")
            return
        assert ada.confirm(run_id).status_code == 200
        assert ada.artifacts()[0]["verification"] == "pending"
        report = ada.api.facade.verification.run()
        assert (report.ok, report.mismatch) == (0, 1)
        (listed,) = ada.artifacts()
        assert (listed["state"], listed["verification"]) == ("available", "mismatch")
        (event,) = self.verify_events(ada)
        assert event["actor"] == {"type": "system", "id": None}
        assert event["target"]["id"] == plan["artifact_id"]
        assert event["changes"]["verification"] == {"from": "pending", "to": "mismatch"}
        assert self.mismatches_metric(ada) == 1
        # Found once: a pending verification is not looked at again.
        assert ada.api.facade.verification.run().mismatch == 0


class TestVerificationSample(LocalOnly):
    """``STRONGROOM_VERIFY_INTERVAL``: older artifacts are re-read too; bytes that changed
    or vanished in storage are ``mismatch`` or ``missing``."""

    def test_changed_and_vanished_bytes_are_found(
        self, ada: Tenant, storage: ObjectStorage, clock: MovableClock
    ) -> None:
        backup_id = ada.backup()
        kept = ada.stored(backup_id, "kept", b"kept bytes")
        rotten = ada.stored(backup_id, "rotten", b"good bytes")
        gone = ada.stored(backup_id, "gone", b"soon gone")
        local = unwrapped(storage)
        assert isinstance(local, LocalDiskStorage)
        (rotten_path,) = (local.root / "objects").rglob(rotten)
        rotten_path.write_bytes(b"bad bytes!")
        (gone_path,) = (local.root / "objects").rglob(gone)
        gone_path.unlink()
        facade = ada.api.facade
        assert facade.verification.run().ok == 0  # nothing pending: nothing re-read
        clock.offset = timedelta(hours=2)
        report = facade.verification.run(verified_before=clock.now() - timedelta(hours=1))
        assert (report.ok, report.mismatch, report.missing) == (1, 1, 1)
        found = {a["id"]: a["verification"] for a in ada.artifacts()}
        assert found == {kept: "ok", rotten: "mismatch", gone: "missing"}
        # Just verified: the next sample of the same age finds nothing due.
        assert facade.verification.run(verified_before=clock.now() - timedelta(hours=1)) == (
            VerificationReport()
        )


class TestLocalDigest(LocalOnly):
    """Local disk knows every object's sha256."""

    def test_parts_joined_into_other_bytes_are_artifact_missing(self, ada: Tenant) -> None:
        """Parts of the right sizes but other content: the joined sha256 differs: 409."""
        data = os.urandom(64 * MIB)
        run_id = ada.run(ada.backup())
        plan = ada.ask_upload(run_id, "big.tar", data).json()
        for part in plan["parts"]:
            assert ada.client.put(part["url"], content=b"\0" * part["size"]).status_code == 200
        assert_error(ada.confirm(run_id), 409, "artifact_missing")


class TestDelete(LocalOnly):
    """The delete route's answers: 204 with no body, and each refusal of contract 10's
    precedence as 409 with its code (the precedence itself, what a delete changes and the
    billing gate: ``tests/usecases/test_artifact_rules.py`` and
    ``tests/domain/test_artifact_windows.py``)."""

    def test_refusals_are_409_with_their_code_and_a_delete_is_204(
        self, ada: Tenant, clock: MovableClock
    ) -> None:
        """``artifact_locked``, ``last_artifact``, then 204 with no body, then ``conflict``
        for the delete and the download of a deleted artifact."""
        backup_id = ada.backup(lock_for="P1D")
        first = ada.stored(backup_id, "a", b"one")
        assert_error(ada.delete(first), 409, "artifact_locked")
        clock.offset = timedelta(days=2)
        assert_error(ada.delete(first), 409, "last_artifact")
        ada.stored(backup_id, "b", b"two")
        deleted = ada.delete(first)
        assert deleted.status_code == 204
        assert deleted.content == b""
        assert_error(ada.delete(first), 409, "conflict")
        assert_error(ada.download_url(first), 409, "conflict")

    def test_storage_itself_refuses_to_delete_a_locked_object(
        self, ada: Tenant, storage: LocalDiskStorage
    ) -> None:
        """Even with the API's own storage handle, a locked object stays."""
        backup_id = ada.backup()
        ada.stored(backup_id, "a", b"one")
        with ada.api.facade.deps.uow() as uow:
            (artifact,) = uow.artifacts.list(ada.workspace_id, False, PageRequest(50, None)).items
        with pytest.raises(ObjectLockedError):
            storage.delete(artifact.object_key)
        with pytest.raises(ObjectLockedError):
            storage.lock(artifact.object_key, datetime.now(UTC))
        assert storage.stat(artifact.object_key) is not None


class TestCustomerBucket(LocalOnly):
    """A ``customer_s3`` destination: bytes go to the customer's bucket, never ours."""

    @pytest.fixture
    def data_facade(self, storage: ObjectStorage, clock: MovableClock) -> Strongroom:
        # The session's SeaweedFS listens on loopback: allowed by configuration only.
        return make_facade(clock=clock, storage=storage, endpoint_policy=LOOPBACK_ALLOWED)

    def test_upload_confirm_refuse_download_and_delete(
        self, ada: Tenant, seaweed: SeaweedServer
    ) -> None:
        """Presigned to the customer's bucket with its credentials; recorded as customer;
        not downloadable (``not_in_our_storage``); not counted; delete removes the object."""
        bucket = "customer-" + secrets.token_hex(4)
        root = Minio(
            seaweed.endpoint.removeprefix("http://"),
            seaweed.access_key,
            seaweed.secret_key,
            secure=False,
            region="us-east-1",
        )
        root.make_bucket(bucket)
        backup_id = ada.backup(lock_for="PT0S")
        patched = ada.client.patch(
            f"/v1/backups/{backup_id}",
            json={
                "destination": {
                    "type": "customer_s3",
                    "endpoint": seaweed.endpoint,
                    "bucket": bucket,
                    "prefix": "vault/",
                },
                "destination_credentials": {
                    "access_key_id": seaweed.access_key,
                    "secret_access_key": seaweed.secret_key,
                },
            },
            headers=ada.headers,
        )
        assert patched.status_code == 200, patched.text
        first = ada.stored(backup_id, "a", b"customer bytes")
        ada.stored(backup_id, "b", b"more")
        listed = {a["id"]: a for a in ada.artifacts()}
        assert listed[first]["storage"] == "customer"
        keys = [o.object_name for o in root.list_objects(bucket, prefix="vault/", recursive=True)]
        assert len(keys) == 2
        assert_error(ada.download_url(first), 409, "not_in_our_storage")
        assert ada.usage() == 0
        assert ada.delete(first).status_code == 204
        keys = [o.object_name for o in root.list_objects(bucket, prefix="vault/", recursive=True)]
        assert len(keys) == 1

    def test_a_bucket_refusing_head_is_502_not_500(
        self, ada: Tenant, seaweed: SeaweedServer
    ) -> None:
        """The customer's bucket answers HEAD with 403 (wrong credentials): confirm is
        502 ``upstream_unavailable`` (issue 12, finding 3), nothing is recorded."""
        bucket = "customer-" + secrets.token_hex(4)
        Minio(
            seaweed.endpoint.removeprefix("http://"),
            seaweed.access_key,
            seaweed.secret_key,
            secure=False,
            region="us-east-1",
        ).make_bucket(bucket)
        backup_id = ada.backup(lock_for="PT0S")
        patched = ada.client.patch(
            f"/v1/backups/{backup_id}",
            json={
                "destination": {
                    "type": "customer_s3",
                    "endpoint": seaweed.endpoint,
                    "bucket": bucket,
                },
                "destination_credentials": {
                    "access_key_id": seaweed.access_key,
                    "secret_access_key": "not-the-secret",
                },
            },
            headers=ada.headers,
        )
        assert patched.status_code == 200, patched.text
        run_id = ada.run(backup_id)
        assert ada.ask_upload(run_id, "a", b"bytes").status_code == 201
        assert_error(ada.confirm(run_id), 502, "upstream_unavailable")
        assert [a["state"] for a in ada.artifacts()] == ["pending"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class TestEndpointPolicy(LocalOnly):
    """Outbound endpoint policy (contract 13), default setting: a disallowed literal
    address is 422 at PATCH; the private ranges are allowed."""

    @pytest.mark.parametrize(
        "endpoint",
        [
            "http://127.0.0.1:8333",
            "http://169.254.169.254",
            "http://[::1]:9000",
            "http://0.0.0.0:80",
            "http://[::ffff:127.0.0.1]",
            "http://[fe80::1]:443",
        ],
    )
    def test_a_disallowed_literal_destination_is_422(self, ada: Tenant, endpoint: str) -> None:
        """Loopback, link-local, metadata, unspecified: ``validation_failed``, unchanged."""
        backup_id = ada.backup()
        response = ada.client.patch(
            f"/v1/backups/{backup_id}",
            json={
                "destination": {"type": "customer_s3", "endpoint": endpoint, "bucket": "bucket-b"},
                "destination_credentials": {"access_key_id": "a", "secret_access_key": "s"},
            },
            headers=ada.headers,
        )
        assert_error(response, 422, "validation_failed", "destination.endpoint")
        got = ada.client.get(f"/v1/backups/{backup_id}", headers=ada.headers).json()
        assert got["destination"] == {"type": "service"}

    def test_a_disallowed_literal_source_is_422(self, ada: Tenant) -> None:
        """A cloud backup's S3 source at the metadata address is refused the same way."""
        created = ada.client.post(
            f"/v1/workspaces/{ada.workspace_id}/backups",
            json={"name": "cloud", "kind": "cloud"},
            headers=ada.headers,
        )
        response = ada.client.patch(
            f"/v1/backups/{created.json()['id']}",
            json={
                "source": {
                    "type": "s3",
                    "endpoint": "https://169.254.169.254",
                    "bucket": "bucket-b",
                },
                "credentials": {"access_key_id": "a", "secret_access_key": "s"},
            },
            headers=ada.headers,
        )
        assert_error(response, 422, "validation_failed", "source.endpoint")

    def test_a_private_address_is_allowed_by_default(self, ada: Tenant) -> None:
        """The default lists the private ranges (the usual self-hosted store)."""
        backup_id = ada.backup()
        response = ada.client.patch(
            f"/v1/backups/{backup_id}",
            json={
                "destination": {
                    "type": "customer_s3",
                    "endpoint": "http://10.20.30.40:9000",
                    "bucket": "bucket-b",
                },
                "destination_credentials": {"access_key_id": "a", "secret_access_key": "s"},
            },
            headers=ada.headers,
        )
        assert response.status_code == 200, response.text


class TestUnreachableEndpoints(LocalOnly):
    """Contract 13: a name is checked at every connection, and a disallowed, refused or
    unresolvable endpoint is one answer, 502 ``upstream_unavailable`` without detail."""

    @pytest.fixture
    def data_facade(self, storage: ObjectStorage, clock: MovableClock) -> Strongroom:
        # Only 127.0.0.2 is listed: the refused-port case has an allowed address to try;
        # loopback (127.0.0.1, ::1) and metadata stay refused as by default.
        return make_facade(
            clock=clock, storage=storage, endpoint_policy=EndpointPolicy.parse("127.0.0.2/32")
        )

    def test_refused_listening_disallowed_and_unknown_are_one_answer(
        self, ada: Tenant, seaweed: SeaweedServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Confirm against a customer bucket whose name resolves (DNS rebinding) to a
        listening store on loopback, to the metadata address, to an allowed address where
        nothing listens, or to nothing: the same status, code and message, no detail."""
        store_port = int(seaweed.endpoint.rsplit(":", 1)[1])
        names = {
            "rebind.test": ["127.0.0.1"],
            "metadata.test": ["169.254.169.254"],
            "v6.test": ["::1"],
            "refused.test": ["127.0.0.2"],
        }

        def resolve(host: str, port: int) -> list[str]:
            if host not in names:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return names[host]

        monkeypatch.setattr(resolver, "system_resolver", resolve)
        endpoints = [
            f"http://rebind.test:{store_port}",
            "http://metadata.test",
            f"http://v6.test:{store_port}",
            f"http://refused.test:{closed_port()}",
            "http://nowhere.test:9000",
        ]
        answers = []
        for index, endpoint in enumerate(endpoints):
            backup_id = ada.backup(name=f"b{index}", lock_for="PT0S")
            patched = ada.client.patch(
                f"/v1/backups/{backup_id}",
                json={
                    "destination": {
                        "type": "customer_s3",
                        "endpoint": endpoint,
                        "bucket": "bucket-b",
                    },
                    "destination_credentials": {
                        "access_key_id": seaweed.access_key,
                        "secret_access_key": seaweed.secret_key,
                    },
                },
                headers=ada.headers,
            )
            assert patched.status_code == 200, patched.text
            run_id = ada.run(backup_id)
            assert ada.ask_upload(run_id, "a", b"bytes").status_code == 201
            confirmed = ada.confirm(run_id)
            assert_error(confirmed, 502, "upstream_unavailable")
            error = confirmed.json()["error"]
            assert "detail" not in error, error
            answers.append((confirmed.status_code, error["code"], error["message"]))
        assert len(set(answers)) == 1, answers


class TestStorageFailure:
    """Storage that does not answer: 502 ``upstream_unavailable``, nothing half-recorded."""

    @pytest.fixture
    def storage(self) -> ObjectStorage:
        return blocking(S3Storage("http://127.0.0.1:9", "key", "secret", "bucket"))

    @pytest.fixture
    def data_facade(self, storage: ObjectStorage, clock: MovableClock) -> Strongroom:
        return make_facade(clock=clock, storage=storage, multipart_threshold=10)

    def test_nothing_is_recorded_when_storage_fails(self, ada: Tenant) -> None:
        """A multipart start fails: no artifact; a confirm fails: the run stays open."""
        run_id = ada.run(ada.backup())
        assert_error(ada.ask_upload(run_id, "big", b"x" * 20), 502, "upstream_unavailable")
        assert ada.artifacts() == []
        assert ada.ask_upload(run_id, "small", b"x").status_code == 201
        assert_error(ada.confirm(run_id), 502, "upstream_unavailable")
        assert [a["state"] for a in ada.artifacts()] == ["pending"]
        run = ada.client.get(f"/v1/runs/{run_id}", headers=ada.headers).json()
        assert run["state"] == "running"


class TestOverARealSocket(LocalOnly):
    """The local-disk flow with an ordinary HTTP client against uvicorn on loopback."""

    def test_round_trip_through_uvicorn(self, data_facade: Strongroom, tmp_path: Path) -> None:
        """Sign-in set-up in process; every byte moves over a real connection."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app_for(data_facade), host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.02)
            base = f"http://127.0.0.1:{port}"
            with httpx2.Client(base_url=base, timeout=30) as client:
                api = Api(data_facade, client)  # type: ignore[arg-type]
                token, workspace_id = api.workspace_admin("ada@example.com")
                ada = Tenant(api, token, workspace_id)
                data = os.urandom(2 * MIB + 3)
                run_id = ada.run(ada.backup())
                plan = ada.ask_upload(run_id, "db.dump", data).json()
                assert plan["url"].startswith(base + "/storage/")
                assert httpx2.put(plan["url"], content=data).status_code == 200
                assert ada.confirm(run_id).status_code == 200
                link = ada.download_url(plan["artifact_id"]).json()["url"]
                got = httpx2.get(link)
                assert got.status_code == 200
                assert sha(got.content) == sha(data)
        finally:
            server.should_exit = True
            thread.join(10)


class TestVerifyRequest(LocalOnly):
    """``POST /v1/artifacts/{aid}/verify`` (contract 11)."""

    def verify(self, tenant: Tenant, artifact_id: str) -> httpx2.Response:
        return tenant.client.post(f"/v1/artifacts/{artifact_id}/verify", headers=tenant.headers)

    def test_202_with_the_artifact_then_the_verifier_records_what_it_found(
        self, ada: Tenant, storage: ObjectStorage
    ) -> None:
        """The answer is the artifact, ``pending``; the verifier then records ``mismatch``
        for bytes changed in storage, with ``verified_at``."""
        artifact_id = ada.stored(ada.backup(), "kept", b"kept bytes")
        local = unwrapped(storage)
        assert isinstance(local, LocalDiskStorage)
        (path,) = (local.root / "objects").rglob(artifact_id)
        path.write_bytes(b"rotten!!!!")
        answer = self.verify(ada, artifact_id)
        assert answer.status_code == 202, answer.text
        assert set(answer.json()) == ARTIFACT_FIELDS
        assert (answer.json()["id"], answer.json()["verification"]) == (artifact_id, "pending")
        ada.api.facade.verification.run()
        (listed,) = ada.artifacts()
        assert listed["verification"] == "mismatch"
        assert listed["verified_at"] is not None
        events = ada.client.get(
            f"/v1/workspaces/{ada.workspace_id}/audit",
            params={"action": "artifact.verify"},
            headers=ada.headers,
        ).json()["data"]
        assert sorted(e["actor"]["type"] for e in events) == ["system", "user"]

    def test_refusals(self, ada: Tenant, bob: Tenant) -> None:
        """Another workspace's artifact: 404; a pending one: 409 ``invalid_state``; a
        deleted one: 409 ``conflict``; a body other than ``{}``: 400."""
        backup_id = ada.backup(lock_for="PT0S")
        kept = ada.stored(backup_id, "kept", b"kept")
        assert_error(self.verify(bob, kept), 404, "not_found")
        pending = ada.upload(ada.run(backup_id), "pending", b"pending")
        assert_error(self.verify(ada, pending), 409, "invalid_state")
        other = ada.stored(backup_id, "other", b"other")
        assert ada.delete(other).status_code == 204
        assert_error(self.verify(ada, other), 409, "conflict")
        odd = ada.client.post(
            f"/v1/artifacts/{kept}/verify", json={"now": True}, headers=ada.headers
        )
        assert_error(odd, 400, "invalid_request")


class TestBatches:
    """`upload-urls` and `download-urls` (contract 14): the shapes, the order asked, and
    presigned GETs honouring `Range`, on local disk and on S3."""

    def test_many_up_many_down_and_ranges(self, ada: Tenant) -> None:
        blobs = {f"pack-{n}": os.urandom(1000 + n) for n in range(3)}
        run_id = ada.run(ada.backup())
        asked = [{"name": n, "size": len(d), "sha256": sha(d)} for n, d in blobs.items()]
        answer = ada.client.post(
            f"/v1/runs/{run_id}/upload-urls", json={"artifacts": asked}, headers=ada.headers
        )
        assert answer.status_code == 201, answer.text
        plans = answer.json()["data"]
        assert [set(plan) for plan in plans] == [
            {"artifact_id", "method", "url", "headers", "expires_at"}
        ] * 3
        for plan, data in zip(plans, blobs.values(), strict=True):
            put = ada.transfer("PUT", plan["url"], content=data, headers=plan["headers"])
            assert put.status_code == 200, put.text
        assert ada.confirm(run_id).status_code == 200
        ids = [plan["artifact_id"] for plan in reversed(plans)]
        links = ada.client.post(
            "/v1/artifacts/download-urls", json={"artifact_ids": ids}, headers=ada.headers
        )
        assert links.status_code == 200, links.text
        assert links.headers["cache-control"] == "no-store"
        data = links.json()["data"]
        assert [item["artifact_id"] for item in data] == ids
        assert {frozenset(item) for item in data} == {
            frozenset({"artifact_id", "method", "url", "expires_at"})
        }
        first = blobs["pack-2"]
        whole = ada.transfer("GET", data[0]["url"])
        assert (whole.status_code, whole.content) == (200, first)
        part = ada.transfer("GET", data[0]["url"], headers={"Range": "bytes=10-19"})
        assert part.status_code == 206
        assert part.content == first[10:20]
        assert part.headers["content-range"] == f"bytes 10-19/{len(first)}"
        beyond = ada.transfer("GET", data[0]["url"], headers={"Range": f"bytes={len(first)}-"})
        assert beyond.status_code == 416

    def test_one_refused_item_refuses_the_whole_request(self, ada: Tenant) -> None:
        """Nothing is announced when one item is refused; an unknown id is a 404."""
        run_id = ada.run(ada.backup())
        good = {"name": "index", "size": 3, "sha256": sha(b"abc")}
        bad = {"name": "pack-1", "size": 3, "sha256": "zz"}
        refused = ada.client.post(
            f"/v1/runs/{run_id}/upload-urls",
            json={"artifacts": [good, bad]},
            headers=ada.headers,
        )
        assert_error(refused, 400, "invalid_request")
        twice = ada.client.post(
            f"/v1/runs/{run_id}/upload-urls",
            json={"artifacts": [good, {**good, "size": 4}]},
            headers=ada.headers,
        )
        assert_error(twice, 409, "invalid_state")
        empty = ada.client.post(
            f"/v1/runs/{run_id}/upload-urls", json={"artifacts": []}, headers=ada.headers
        )
        assert_error(empty, 400, "invalid_request")
        assert ada.artifacts() == []
        unknown = ada.client.post(
            "/v1/artifacts/download-urls",
            json={"artifact_ids": [str(uuid4())]},
            headers=ada.headers,
        )
        assert_error(unknown, 404, "not_found")


class TestReferences(LocalOnly):
    """`confirm` with `references` (contract 14): what it refuses, the lock it extends,
    and `artifact_referenced` while the referencing run is live."""

    def test_refusals_extension_and_delete(self, ada: Tenant, clock: MovableClock) -> None:
        backup_id = ada.backup(lock_for="P1D")
        first = ada.run(backup_id)
        pack = ada.upload(first, "pack-1", b"pack bytes")
        old_index = ada.upload(first, "index", b"first index")
        assert ada.confirm(first).status_code == 200
        second = ada.run(backup_id)
        index = ada.upload(second, "index", b"second index")

        def confirm(references: list[str]) -> httpx2.Response:
            return ada.client.post(
                f"/v1/runs/{second}/confirm",
                json={"references": references},
                headers=ada.headers,
            )

        assert_error(confirm([str(uuid4())]), 404, "not_found")
        assert_error(confirm([index]), 404, "not_found")
        other_backup_pack = ada.stored(ada.backup("Other"), "pack-9", b"other")
        assert_error(confirm([other_backup_pack]), 404, "not_found")
        clock.offset = timedelta(hours=12)
        confirmed = confirm([pack, pack])
        assert confirmed.status_code == 200, confirmed.text
        by_id = {a["id"]: a for a in ada.artifacts()}
        assert by_id[pack]["locked_until"] == by_id[index]["locked_until"]
        assert by_id[old_index]["locked_until"] < by_id[pack]["locked_until"]
        clock.offset = timedelta(days=3)
        assert_error(ada.delete(pack), 409, "artifact_referenced")
        assert ada.delete(old_index).status_code == 204
        third = ada.run(backup_id)
        ada.upload(third, "index", b"third")
        gone = ada.client.post(
            f"/v1/runs/{third}/confirm", json={"references": [old_index]}, headers=ada.headers
        )
        assert_error(gone, 409, "invalid_state", old_index)
        assert ada.confirm(third).status_code == 200
        assert ada.delete(index).status_code == 204
        assert ada.delete(pack).status_code == 204
