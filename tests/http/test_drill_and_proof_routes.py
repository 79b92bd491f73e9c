"""HTTP tests of restore drills and immutability proofs (contract 16): status codes, wire
shapes, refusals, and a proof whose signature checks with the served key and fails once
tampered with. Drills on real databases and buckets are in
tests/integration/test_drills_real.py."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from strongroom.adapters.proofs.signing import ProofSignatureError, load_public_key, verify
from strongroom.adapters.runtime.blocking import blocking_call, unwrapped
from strongroom.adapters.runtime.drills import DrillRunner
from support.checks import assert_error
from support.world import Api, bearer

DRILL_FIELDS = {
    "id",
    "backup_id",
    "run_id",
    "state",
    "created_at",
    "started_at",
    "finished_at",
    "restore_seconds",
    "bytes",
    "checks",
    "error",
}
DATA = b"artifact bytes"


class Workspace:
    """An admin with a confirmed artifact of a cloud (s3) backup, locked an hour, and a
    manual backup."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.token, self.workspace_id = api.workspace_admin("ada@example.com", "Acme")
        self.cloud, self.artifact = self.backup(
            "cloud",
            {
                "source": {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "src"},
                "credentials": {"access_key_id": "AKIA-SRC", "secret_access_key": "src-secret"},
            },
        )
        self.manual, _ = self.backup("manual", {})

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    def backup(self, kind: str, patch: dict[str, Any]) -> tuple[str, str]:
        client = self.api.client
        created = client.post(
            f"/v1/workspaces/{self.workspace_id}/backups",
            json={"name": kind, "kind": kind},
            headers=self.headers,
        )
        backup_id: str = created.json()["id"]
        retention = {"expire_after": "P30D", "lock_for": "PT1H"}
        patched = client.patch(
            f"/v1/backups/{backup_id}", json={**patch, "retention": retention}, headers=self.headers
        )
        assert patched.status_code == 200, patched.text
        if kind == "manual":
            run = client.post("/v1/runs", json={"backup_id": backup_id}, headers=self.headers)
        else:
            run = client.post(f"/v1/backups/{backup_id}/trigger", headers=self.headers)
        run_id = run.json()["id"]
        plan = client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": "a", "size": len(DATA), "sha256": hashlib.sha256(DATA).hexdigest()},
            headers=self.headers,
        ).json()
        assert client.put(plan["url"], content=DATA, headers=plan["headers"]).status_code == 200
        confirmed = client.post(f"/v1/runs/{run_id}/confirm", headers=self.headers)
        assert confirmed.status_code == 200, confirmed.text
        return backup_id, str(plan["artifact_id"])


@pytest.fixture
def ada(api: Api) -> Workspace:
    return Workspace(api)


class TestDrills:
    def test_a_drill_of_a_cloud_backup_is_queued_and_listed(self, ada: Workspace) -> None:
        client = ada.api.client
        created = client.post(f"/v1/backups/{ada.cloud}/drills", headers=ada.headers)
        assert created.status_code == 202, created.text
        drill = created.json()
        assert set(drill) == DRILL_FIELDS
        assert (drill["backup_id"], drill["state"], drill["run_id"]) == (ada.cloud, "queued", None)
        listed = client.get(f"/v1/backups/{ada.cloud}/drills", headers=ada.headers)
        assert listed.status_code == 200
        assert [d["id"] for d in listed.json()["data"]] == [drill["id"]]

    def test_the_runner_fails_a_drill_naming_why(self, ada: Workspace) -> None:
        """The artifact is not an archive of an s3 source: the drill says so."""
        client = ada.api.client
        client.post(f"/v1/backups/{ada.cloud}/drills", headers=ada.headers)
        (done,) = blocking_call(DrillRunner(unwrapped(ada.api.facade).drills).run_queued())
        listed = client.get(f"/v1/backups/{ada.cloud}/drills", headers=ada.headers).json()
        (drill,) = listed["data"]
        assert drill["id"] == str(done.id)
        assert drill["state"] == "failed"
        assert drill["run_id"] is not None
        assert drill["finished_at"] is not None
        assert "the archive is damaged or truncated" in drill["error"]

    def test_a_local_or_manual_backup_is_refused(self, ada: Workspace) -> None:
        answer = ada.api.client.post(f"/v1/backups/{ada.manual}/drills", headers=ada.headers)
        assert_error(answer, 422, "validation_failed", "client-side")

    def test_another_workspaces_backup_is_not_found(self, ada: Workspace, api: Api) -> None:
        token, _ = api.workspace_admin("bob@example.com", "Globex")
        for method in ("post", "get"):
            answer = getattr(api.client, method)(
                f"/v1/backups/{ada.cloud}/drills", headers=bearer(token)
            )
            assert_error(answer, 404, "not_found")


class TestProofs:
    def proof(self, ada: Workspace) -> dict[str, Any]:
        answer = ada.api.client.get(f"/v1/workspaces/{ada.workspace_id}/proof", headers=ada.headers)
        assert answer.status_code == 200, answer.text
        document: dict[str, Any] = answer.json()
        return document

    def key(self, api: Api) -> Any:
        answer = api.client.get("/.well-known/strongroom-proof-key")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/x-pem-file")
        return load_public_key(answer.text)

    def test_the_proof_lists_every_available_artifact_with_its_storage_lock(
        self, ada: Workspace
    ) -> None:
        document = self.proof(ada)
        verify(document, self.key(ada.api))
        assert document["workspace_id"] == str(ada.workspace_id)
        assert document["findings"] == []
        entries = {entry["id"]: entry for entry in document["artifacts"]}
        assert len(entries) == 2
        entry = entries[ada.artifact]
        assert entry["backup_id"] == ada.cloud
        assert (entry["size"], entry["sha256"]) == (len(DATA), hashlib.sha256(DATA).hexdigest())
        assert entry["held"] is False
        assert entry["locked_until"] is not None
        # Local disk keeps its own lock record: the same instant as the artifact's.
        assert entry["storage"]["mode"] == "COMPLIANCE"
        assert entry["storage"]["retain_until"] == entry["locked_until"]

    def test_a_tampered_proof_fails_verification(self, ada: Workspace) -> None:
        document = self.proof(ada)
        document["artifacts"][0]["locked_until"] = "2099-01-01T00:00:00Z"
        with pytest.raises(ProofSignatureError):
            verify(document, self.key(ada.api))

    def test_another_workspaces_proof_is_not_found(self, ada: Workspace) -> None:
        api = ada.api
        token, _ = api.workspace_admin("bob@example.com", "Globex")
        answer = api.client.get(f"/v1/workspaces/{ada.workspace_id}/proof", headers=bearer(token))
        assert_error(answer, 404, "not_found", "workspace")
