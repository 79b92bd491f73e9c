"""HTTP tests of runs (contract sections 4, 6 and 10): ``POST /v1/runs``, ``GET
/v1/runs/{run_id}``, ``trigger``: status codes, the run's wire shape, order of checks and
Idempotency-Key. The kind rules, states, billing gates, permissions and audit of runs:
``tests/usecases/test_run_rules.py`` and ``tests/usecases/test_runs_and_artifacts.py``."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import attrs
import httpx2
import pytest

from strongroom.domain.billing import BillingState
from strongroom.domain.workspaces import Membership
from support.checks import assert_error
from support.world import Api, bearer

RETENTION = {"expire_after": "P30D", "lock_for": "P7D"}
CLOUD_COMPLETE = {
    "source": {"type": "s3", "endpoint": "https://s3.example.com:9000", "bucket": "data"},
    "credentials": {"access_key_id": "AKIA-1", "secret_access_key": "s3-secret-1"},
    "retention": RETENTION,
}
RUN_FIELDS = {
    "id",
    "backup_id",
    "workspace_id",
    "state",
    "trigger",
    "worker_id",
    "created_at",
    "started_at",
    "finished_at",
    "artifact_count",
    "bytes",
    "error",
    "attempt",
    "lease_expires_at",
    "cancel_requested",
    "progress",
}


@attrs.frozen
class Tenant:
    """A workspace admin's session with shortcuts for backup and run calls."""

    api: Api
    token: str
    workspace_id: UUID

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    def backup(self, kind: str = "manual", name: str = "Nightly", **patch: Any) -> str:
        """A backup, PATCHed with ``patch`` (when given); its id."""
        created = self.api.client.post(
            f"/v1/workspaces/{self.workspace_id}/backups",
            json={"name": name, "kind": kind},
            headers=self.headers,
        )
        assert created.status_code == 201, created.text
        backup_id: str = created.json()["id"]
        if patch:
            patched = self.api.client.patch(
                f"/v1/backups/{backup_id}", json=patch, headers=self.headers
            )
            assert patched.status_code == 200, patched.text
        return backup_id

    def active_manual(self, name: str = "Nightly") -> str:
        return self.backup("manual", name, retention=RETENTION)

    def active_cloud(self, name: str = "Cloud") -> str:
        return self.backup("cloud", name, **CLOUD_COMPLETE)

    def start(self, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return self.api.client.post(
            "/v1/runs", json=body, headers={**self.headers, **(headers or {})}
        )

    def trigger(self, backup_id: str, **options: Any) -> httpx2.Response:
        return self.api.client.post(
            f"/v1/backups/{backup_id}/trigger",
            headers={**self.headers, **options.pop("headers", {})},
            **options,
        )

    def get_run(self, run_id: str, token: str | None = None) -> httpx2.Response:
        return self.api.client.get(f"/v1/runs/{run_id}", headers=bearer(token or self.token))

    def set_billing(self, state: BillingState) -> None:
        self.api.facade.workspaces.set_billing_state(self.workspace_id, state)

    def audit(self, action: str) -> list[dict[str, Any]]:
        response = self.api.client.get(
            f"/v1/workspaces/{self.workspace_id}/audit",
            params={"action": action},
            headers=self.headers,
        )
        assert response.status_code == 200, response.text
        events: list[dict[str, Any]] = response.json()["data"]
        return events

    def member(self, email: str, role: str) -> str:
        """A session of ``email`` scoped to this workspace with ``role``."""
        token = self.api.person(email)
        me = self.api.client.get("/v1/me", headers=bearer(token)).json()
        with self.api.facade.deps.uow() as uow:
            uow.memberships.add(
                Membership(
                    self.workspace_id,
                    UUID(me["principal"]["id"]),
                    role,
                    self.api.facade.deps.clock.now(),
                )
            )
            uow.commit()
        return self.api.switch(token, self.workspace_id)


@pytest.fixture
def ada(api: Api) -> Tenant:
    token, workspace_id = api.workspace_admin("ada@example.com")
    return Tenant(api, token, workspace_id)


@pytest.fixture
def bob(api: Api) -> Tenant:
    token, workspace_id = api.workspace_admin("bob@example.com", "Globex")
    return Tenant(api, token, workspace_id)


class TestStartRun:
    """``POST /v1/runs``."""

    def test_a_manual_active_backup_gets_a_running_run(self, ada: Tenant) -> None:
        """201 with the whole run in its wire form (what a new run holds:
        ``tests/usecases/test_run_rules.py::TestStart``)."""
        backup_id = ada.active_manual()
        response = ada.start({"backup_id": backup_id})
        assert response.status_code == 201, response.text
        run = response.json()
        assert set(run) == RUN_FIELDS
        assert run["backup_id"] == backup_id
        assert run["workspace_id"] == str(ada.workspace_id)
        assert (run["state"], run["trigger"]) == ("running", "manual")
        assert run["created_at"].endswith("Z")
        assert (run["finished_at"], run["worker_id"], run["progress"]) == (None, None, None)
        assert ada.get_run(run["id"]).json() == run

    @pytest.mark.parametrize(
        "body",
        [{}, {"backup_id": "nope"}, {"backup_id": 5}, {"backup_id": str(uuid4()), "x": 1}],
    )
    def test_a_malformed_body_is_invalid_request(self, ada: Tenant, body: Any) -> None:
        """Missing field, bad UUID, wrong type, unknown field: 400."""
        assert_error(ada.start(body), 400, "invalid_request")

    def test_order_of_checks(self, ada: Tenant, bob: Tenant) -> None:
        """Body before 404, 404 before kind, kind before billing, billing before state."""
        viewer = ada.member("vic@example.com", "viewer")
        response = ada.api.client.post("/v1/runs", content=b"{bad", headers=bearer(viewer))
        assert_error(response, 403, "forbidden", "artifacts:upload")
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.start({"backup_id": "nope"}), 400, "invalid_request")
        assert_error(ada.start({"backup_id": str(uuid4())}), 404, "not_found")
        ada.set_billing(BillingState.ACTIVE)
        cloud, draft = ada.backup("cloud"), ada.backup("manual", "Draft")
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.start({"backup_id": cloud}), 422, "validation_failed")
        assert_error(ada.start({"backup_id": draft}), 409, "billing_restricted")

    def test_unscoped_and_unauthenticated_callers(self, api: Api) -> None:
        """401 without a credential, 403 without a workspace."""
        assert_error(api.client.post("/v1/runs", json={}), 401, "unauthenticated")
        token = api.person("nobody@example.com")
        response = api.client.post("/v1/runs", json={}, headers=bearer(token))
        assert_error(response, 403, "forbidden", "select a workspace first")

    def test_an_idempotency_key_replays_the_first_run(self, ada: Tenant) -> None:
        """Same key and body: the same run, one run created; another body: conflict."""
        backup_id = ada.active_manual()
        key = {"Idempotency-Key": "run-1"}
        first = ada.start({"backup_id": backup_id}, headers=key)
        again = ada.start({"backup_id": backup_id}, headers=key)
        assert first.status_code == again.status_code == 201
        assert first.json() == again.json()
        assert len(ada.audit("run.create")) == 1
        other = ada.start({"backup_id": ada.active_manual("Other")}, headers=key)
        assert_error(other, 409, "idempotency_conflict")


class TestReadRun:
    """``GET /v1/runs/{run_id}``."""

    def test_another_workspaces_run_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """404 for another workspace's run and for none at all; 400 for a bad id."""
        theirs = bob.start({"backup_id": bob.active_manual()}).json()
        assert_error(ada.get_run(theirs["id"]), 404, "not_found", "run")
        assert_error(ada.get_run(str(uuid4())), 404, "not_found")
        assert_error(ada.get_run("not-a-uuid"), 400, "invalid_request", "run_id")


class TestTrigger:
    """``POST /v1/backups/{bid}/trigger``."""

    def test_an_active_cloud_backup_gets_a_queued_api_run(self, ada: Tenant) -> None:
        """202 with the queued run in its wire form, readable at once (the trigger's rules
        and audit: ``tests/usecases/test_run_rules.py::TestTrigger``)."""
        backup_id = ada.active_cloud()
        response = ada.trigger(backup_id)
        assert response.status_code == 202, response.text
        run = response.json()
        assert set(run) == RUN_FIELDS
        assert (run["state"], run["trigger"], run["backup_id"]) == ("queued", "api", backup_id)
        assert run["started_at"] is None
        assert ada.get_run(run["id"]).json() == run

    def test_an_empty_json_body_is_accepted_and_another_refused(self, ada: Tenant) -> None:
        """The body is optional: nothing or ``{}``."""
        backup_id = ada.active_cloud()
        assert ada.trigger(backup_id, json={}).status_code == 202
        assert_error(ada.trigger(backup_id, json={"now": True}), 400, "invalid_request")
