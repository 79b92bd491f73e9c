"""Retention over HTTP (contract 15): `keep` on the write-once policy, the explain and
preview endpoints' shapes and refusals, and legal holds (status codes, order of checks,
wire shapes; the rules themselves are tested in the domain and the contract suite)."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx2

from support.backups_http import Tenant, viewer_in
from support.world import bearer

POLICY = {"expire_after": "P1D", "lock_for": "PT0S"}
KEPT = {**POLICY, "keep": {"daily": 7, "weekly": 4}}
VERDICT_FIELDS = {"run_id", "finished_at", "keep", "reasons", "expires_at"}


def patch(ada: Tenant, backup_id: str, body: dict[str, Any]) -> httpx2.Response:
    return ada.api.client.patch(f"/v1/backups/{backup_id}", json=body, headers=ada.headers)


def stored_run(ada: Tenant, backup_id: str, content: bytes) -> tuple[str, str]:
    """A confirmed run of a manual backup with one artifact: the run's and artifact's ids."""
    client = ada.api.client
    run = client.post("/v1/runs", json={"backup_id": backup_id}, headers=ada.headers)
    assert run.status_code == 201, run.text
    run_id = run.json()["id"]
    plan = client.post(
        f"/v1/runs/{run_id}/upload-url",
        json={"name": "a.bin", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()},
        headers=ada.headers,
    ).json()
    put = client.put(plan["url"], content=content, headers=plan["headers"])
    assert put.status_code == 200, put.text
    confirmed = client.post(f"/v1/runs/{run_id}/confirm", headers=ada.headers)
    assert confirmed.status_code == 200, confirmed.text
    return run_id, plan["artifact_id"]


class TestKeepOnThePolicy:
    """`retention.keep`: absent unless set, write-once like the rest of the policy."""

    def test_a_policy_without_keep_reads_as_before(self, ada: Tenant) -> None:
        backup = ada.backup()
        answer = patch(ada, backup["id"], {"retention": POLICY})
        assert answer.status_code == 200, answer.text
        assert answer.json()["retention"] == POLICY
        assert ada.read(backup["id"])["retention"] == POLICY

    def test_keep_is_shown_stored_and_write_once(self, ada: Tenant) -> None:
        backup = ada.backup()
        answer = patch(ada, backup["id"], {"retention": KEPT})
        assert answer.status_code == 200, answer.text
        shown = {"last": 0, "hourly": 0, "daily": 7, "weekly": 4, "monthly": 0, "yearly": 0}
        assert answer.json()["retention"] == {**POLICY, "keep": shown}
        assert ada.read(backup["id"])["retention"]["keep"] == shown
        listed = ada.list().json()["data"]
        assert listed[0]["retention"]["keep"] == shown
        audit = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/audit",
            params={"action": "backup.update"},
            headers=ada.headers,
        ).json()["data"][0]
        assert audit["changes"]["retention"]["to"] == (
            "expire_after=P1D lock_for=PT0S keep=daily:7,weekly:4"
        )
        again = patch(ada, backup["id"], {"retention": {**POLICY, "keep": shown}})
        assert again.status_code == 200, again.text
        for other in ({**POLICY, "keep": {"daily": 8}}, POLICY):
            refused = patch(ada, backup["id"], {"retention": other})
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "retention_immutable"

    def test_malformed_keep_is_400(self, ada: Tenant) -> None:
        backup = ada.backup()
        for keep in ({"daily": -1}, {"daily": "7"}, {"fortnightly": 1}, {"daily": 100_001}):
            answer = patch(ada, backup["id"], {"retention": {**POLICY, "keep": keep}})
            assert answer.status_code == 400, (keep, answer.text)
            assert answer.json()["error"]["code"] == "invalid_request"


class TestExplainAndPreview:
    """`GET .../retention` and `POST .../retention/preview`."""

    def test_each_run_with_its_verdict_newest_first_paginated(self, ada: Tenant) -> None:
        backup = ada.backup()
        assert patch(ada, backup["id"], {"retention": KEPT}).status_code == 200
        runs = [stored_run(ada, backup["id"], bytes([n])) for n in range(3)]
        path = f"/v1/backups/{backup['id']}/retention"
        first = ada.api.client.get(path, params={"limit": 2}, headers=ada.headers)
        assert first.status_code == 200, first.text
        page = first.json()
        assert set(page) == {"data", "next_cursor"}
        assert [set(item) for item in page["data"]] == [VERDICT_FIELDS] * 2
        newest = page["data"][0]
        assert newest["keep"] is True
        assert newest["reasons"][0] == "newest"
        assert "within P1D" in newest["reasons"]
        assert newest["expires_at"].endswith("Z")
        rest = ada.api.client.get(
            path, params={"cursor": page["next_cursor"]}, headers=ada.headers
        ).json()
        assert rest["next_cursor"] is None
        seen = [item["run_id"] for item in page["data"] + rest["data"]]
        assert seen == [run_id for run_id, _ in reversed(runs)]

    def test_preview_answers_for_the_proposed_policy_and_changes_nothing(self, ada: Tenant) -> None:
        backup = ada.backup()
        assert patch(ada, backup["id"], {"retention": POLICY}).status_code == 200
        stored_run(ada, backup["id"], b"one")
        path = f"/v1/backups/{backup['id']}/retention/preview"
        proposed = {"expire_after": "P2D", "lock_for": "PT0S", "keep": {"last": 1}}
        answer = ada.api.client.post(path, json={"retention": proposed}, headers=ada.headers)
        assert answer.status_code == 200, answer.text
        [verdict] = answer.json()["data"]
        assert verdict["reasons"] == ["newest", "within P2D", "last 1"]
        assert ada.read(backup["id"])["retention"] == POLICY

    def test_refusals_in_the_contracts_order(self, ada: Tenant) -> None:
        backup = ada.backup()
        client = ada.api.client
        path = f"/v1/backups/{backup['id']}/retention"
        assert client.get(path).status_code == 401
        assert client.get("/v1/backups/nope/retention", headers=ada.headers).status_code == 400
        unknown = "/v1/backups/00000000-0000-4000-8000-000000000000/retention"
        assert client.get(unknown, headers=ada.headers).status_code == 404
        no_policy = client.get(path, headers=ada.headers)
        assert no_policy.status_code == 409
        assert no_policy.json()["error"]["code"] == "invalid_state"
        bad = client.post(f"{path}/preview", json={"retention": {}}, headers=ada.headers)
        assert bad.status_code == 400
        missing = client.post(unknown + "/preview", json={"retention": POLICY}, headers=ada.headers)
        assert missing.status_code == 404
        longer = {"expire_after": "P1D", "lock_for": "P2D"}
        refused = client.post(f"{path}/preview", json={"retention": longer}, headers=ada.headers)
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "lock_exceeds_expiry"


class TestLegalHold:
    """Holds on artifacts and runs: admins only, shown on the artifact, kept from delete."""

    def test_hold_release_and_delete(self, ada: Tenant) -> None:
        backup = ada.backup()
        assert patch(ada, backup["id"], {"retention": POLICY}).status_code == 200
        stored_run(ada, backup["id"], b"first")
        run_id, artifact_id = stored_run(ada, backup["id"], b"second")
        client = ada.api.client
        hold = f"/v1/artifacts/{artifact_id}/hold"
        held = client.post(hold, headers=ada.headers)
        assert held.status_code == 200, held.text
        assert (held.json()["id"], held.json()["held"]) == (artifact_id, True)
        refused = client.delete(f"/v1/artifacts/{artifact_id}", headers=ada.headers)
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "artifact_held"
        listed = client.get(
            f"/v1/workspaces/{ada.workspace_id}/artifacts", headers=ada.headers
        ).json()["data"]
        assert {item["id"]: item["held"] for item in listed}[artifact_id] is True
        released = client.delete(hold, headers=ada.headers)
        assert released.status_code == 200, released.text
        assert released.json()["held"] is False
        on_run = client.post(f"/v1/runs/{run_id}/hold", headers=ada.headers)
        assert on_run.status_code == 200, on_run.text
        assert on_run.json()["id"] == run_id
        assert client.get(f"/v1/artifacts/{artifact_id}/hold", headers=ada.headers).status_code in (
            404,
            405,
        )
        off_run = client.delete(f"/v1/runs/{run_id}/hold", headers=ada.headers)
        assert off_run.status_code == 200, off_run.text
        deleted = client.delete(f"/v1/artifacts/{artifact_id}", headers=ada.headers)
        assert deleted.status_code == 204, deleted.text
        gone = client.post(hold, headers=ada.headers)
        assert gone.status_code == 409
        assert gone.json()["error"]["code"] == "conflict"

    def test_only_admins_hold(self, ada: Tenant) -> None:
        backup = ada.backup()
        assert patch(ada, backup["id"], {"retention": POLICY}).status_code == 200
        _, artifact_id = stored_run(ada, backup["id"], b"kept")
        token, _ = viewer_in(ada.api, ada.workspace_id, "vera@example.com")
        refused = ada.api.client.post(f"/v1/artifacts/{artifact_id}/hold", headers=bearer(token))
        assert refused.status_code == 403
        unknown = "/v1/artifacts/00000000-0000-4000-8000-000000000000/hold"
        assert ada.api.client.post(unknown, headers=ada.headers).status_code == 404
