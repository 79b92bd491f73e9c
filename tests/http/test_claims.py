"""HTTP tests of the worker protocol (contract 11): ``POST /v1/claims``, heartbeats and
``fail``: who may call them, the lease, cancels seen at a heartbeat, pending artifacts
aborted, and the wire shape."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_runs import RETENTION, RUN_FIELDS, Tenant

from strongroom.adapters.wire.present import present
from strongroom.domain.billing import BillingState
from support.backups_http import FixedClock
from support.checks import assert_error
from support.world import Api, bearer, make_client, make_facade

START = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    """An instant as the wire shows it."""
    shown: str = present(moment)
    return shown


@pytest.fixture
def clock() -> FixedClock:
    """A clock that stands still until the test moves it."""
    return FixedClock(START)


@pytest.fixture
def api(clock: FixedClock) -> Iterator[Api]:
    """A service on the test's clock."""
    facade = make_facade(clock=clock)
    with make_client(facade) as client:
        yield Api(facade, client)


@pytest.fixture
def ada(api: Api) -> Tenant:
    """Ada administers Acme."""
    return Tenant(api, *api.workspace_admin("ada@example.com"))


def new_worker(tenant: Tenant, name: str = "rack") -> tuple[str, str]:
    """A worker of the tenant's workspace: its id and token."""
    made = tenant.api.client.post("/v1/workers", json={"name": name}, headers=tenant.headers)
    assert made.status_code == 201, made.text
    return made.json()["id"], made.json()["token"]


def queued_run(tenant: Tenant, worker_id: str, name: str = "Local") -> tuple[str, str]:
    """A local backup assigned to the worker, and a triggered (queued) run of it."""
    backup_id = tenant.backup("local", name, worker_id=worker_id, retention=RETENTION)
    triggered = tenant.trigger(backup_id)
    assert triggered.status_code == 202, triggered.text
    return backup_id, triggered.json()["id"]


def claim(api: Api, token: str, body: Any = None) -> Any:
    """``POST /v1/claims``."""
    return api.client.post("/v1/claims", json=body, headers=bearer(token))


def heartbeat(api: Api, token: str, run_id: str, body: Any = None) -> Any:
    """``POST /v1/runs/{run_id}/heartbeat``."""
    return api.client.post(f"/v1/runs/{run_id}/heartbeat", json=body, headers=bearer(token))


def fail(api: Api, token: str, run_id: str, error: str = "disk full") -> Any:
    """``POST /v1/runs/{run_id}/fail``."""
    return api.client.post(f"/v1/runs/{run_id}/fail", json={"error": error}, headers=bearer(token))


class TestClaim:
    """A worker takes the oldest queued run of its backups, with a lease."""

    def test_a_worker_claims_its_queued_run(self, ada: Tenant, clock: FixedClock) -> None:
        """201 with the run running, its backup and a 60 s lease."""
        worker_id, token = new_worker(ada)
        backup_id, run_id = queued_run(ada, worker_id)
        clock.moment = START + timedelta(seconds=5)
        answer = claim(ada.api, token, {})
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert set(body) == {"run", "backup", "lease_expires_at"}
        assert set(body["run"]) == RUN_FIELDS
        assert body["run"]["id"] == run_id
        assert body["run"]["state"] == "running"
        assert body["run"]["worker_id"] == worker_id
        assert body["run"]["started_at"] == stamp(clock.moment)
        assert body["backup"]["id"] == backup_id
        lease = stamp(clock.moment + timedelta(seconds=60))
        assert body["lease_expires_at"] == lease == body["run"]["lease_expires_at"]
        shown = ada.get_run(run_id).json()
        assert (shown["state"], shown["worker_id"]) == ("running", worker_id)

    def test_oldest_first_and_each_run_once(self, ada: Tenant, clock: FixedClock) -> None:
        """Two queued runs go out oldest first; then nothing is left: 204, no body."""
        worker_id, token = new_worker(ada)
        _, first = queued_run(ada, worker_id, "One")
        clock.moment = START + timedelta(seconds=1)
        _, second = queued_run(ada, worker_id, "Two")
        assert claim(ada.api, token).json()["run"]["id"] == first
        assert claim(ada.api, token).json()["run"]["id"] == second
        empty = claim(ada.api, token)
        assert empty.status_code == 204
        assert empty.content == b""

    def test_another_workers_runs_are_not_claimed(self, ada: Tenant) -> None:
        """A worker gets only runs of backups assigned to it."""
        worker_id, _ = new_worker(ada)
        _, other = new_worker(ada, "other")
        queued_run(ada, worker_id)
        assert claim(ada.api, other).status_code == 204

    def test_a_claim_waits_for_a_run_within_wait_seconds(self, ada: Tenant) -> None:
        """With wait_seconds and nothing queued, 204 after the wait."""
        _, token = new_worker(ada)
        assert claim(ada.api, token, {"wait_seconds": 1}).status_code == 204

    @pytest.mark.parametrize("wait", [-1, 31])
    def test_wait_seconds_out_of_range_is_refused(self, ada: Tenant, wait: int) -> None:
        """wait_seconds is 0 to 30."""
        _, token = new_worker(ada)
        assert_error(claim(ada.api, token, {"wait_seconds": wait}), 400, "invalid_request")

    def test_persons_and_api_keys_cannot_claim(self, ada: Tenant) -> None:
        """403 forbidden for anything but a worker."""
        worker_id, _ = new_worker(ada)
        queued_run(ada, worker_id)
        key = ada.api.client.post(
            "/v1/api-keys",
            json={"name": "ci", "permissions": ["artifacts:upload"]},
            headers=ada.headers,
        ).json()["token"]
        for token in (ada.token, key):
            assert_error(claim(ada.api, token), 403, "forbidden")

    def test_billing_never_refuses_a_claim(self, ada: Tenant) -> None:
        """A blocked workspace's worker still claims its queued run."""
        worker_id, token = new_worker(ada)
        queued_run(ada, worker_id)
        ada.set_billing(BillingState.BLOCKED)
        assert claim(ada.api, token).status_code == 201

    def test_a_claim_is_audited_with_the_worker_as_actor(self, ada: Tenant) -> None:
        """``run.claim`` by the worker."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        claim(ada.api, token)
        events = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/audit",
            params={"action": "run.claim"},
            headers=ada.headers,
        ).json()["data"]
        assert [(e["actor"]["type"], e["actor"]["id"], e["target"]["id"]) for e in events] == [
            ("worker", worker_id, run_id)
        ]


class TestHeartbeat:
    """The holder extends its lease and hears of a cancel."""

    def test_a_heartbeat_extends_the_lease(self, ada: Tenant, clock: FixedClock) -> None:
        """200 with the lease 60 s from now; progress is recorded on the run."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        claim(ada.api, token)
        clock.moment = START + timedelta(seconds=40)
        answer = heartbeat(
            ada.api, token, run_id, {"progress": {"bytes_done": 5, "bytes_total": 10}}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "lease_expires_at": stamp(clock.moment + timedelta(seconds=60)),
            "cancel_requested": False,
        }
        progress = ada.get_run(run_id).json()["progress"]
        assert (progress["bytes_done"], progress["bytes_total"]) == (5, 10)

    def test_another_worker_or_a_person_gets_404(self, ada: Tenant) -> None:
        """Only the holder: anyone else is told the run does not exist."""
        worker_id, token = new_worker(ada)
        _, other = new_worker(ada, "other")
        _, run_id = queued_run(ada, worker_id)
        assert_error(heartbeat(ada.api, token, run_id), 404, "not_found")  # not claimed yet
        claim(ada.api, token)
        for caller in (other, ada.token):
            assert_error(heartbeat(ada.api, caller, run_id), 404, "not_found")

    def test_a_cancel_is_seen_at_the_next_heartbeat(self, ada: Tenant) -> None:
        """cancel_requested true, and the run is cancelled; then 409 invalid_state."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        claim(ada.api, token)
        cancelled = ada.api.client.post(f"/v1/runs/{run_id}/cancel", headers=ada.headers)
        assert cancelled.json()["cancel_requested"] is True
        answer = heartbeat(ada.api, token, run_id)
        assert answer.status_code == 200, answer.text
        assert answer.json()["cancel_requested"] is True
        assert ada.get_run(run_id).json()["state"] == "cancelled"
        assert_error(heartbeat(ada.api, token, run_id), 409, "invalid_state")


class TestFail:
    """The holder reports a failure; its pending uploads are aborted."""

    def test_the_holder_fails_its_run(self, ada: Tenant, clock: FixedClock) -> None:
        """200 failed with the error; the announced artifact is no longer pending."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        claim(ada.api, token)
        data = b"partial"
        announced = ada.api.client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": "a.bin", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
            headers=bearer(token),
        )
        assert announced.status_code == 201, announced.text
        clock.moment = START + timedelta(seconds=9)
        answer = fail(ada.api, token, run_id, "disk full")
        assert answer.status_code == 200, answer.text
        assert set(answer.json()) == RUN_FIELDS
        assert answer.json()["state"] == "failed"
        assert answer.json()["error"] == "disk full"
        assert answer.json()["finished_at"] == stamp(clock.moment)
        deleted = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/artifacts",
            params={"state": "deleted"},
            headers=ada.headers,
        ).json()["data"]
        assert [a["id"] for a in deleted] == [announced.json()["artifact_id"]]
        assert_error(fail(ada.api, token, run_id), 409, "invalid_state")

    def test_only_the_holder_or_a_manual_client_fails_a_run(self, ada: Tenant) -> None:
        """Another caller gets 404; the client of a manual run fails it."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        assert_error(fail(ada.api, token, run_id), 404, "not_found")  # queued: not held
        claim(ada.api, token)
        assert_error(fail(ada.api, ada.token, run_id), 404, "not_found")
        manual = ada.start({"backup_id": ada.active_manual()}).json()["id"]
        failed = fail(ada.api, ada.token, manual, "client crashed")
        assert failed.status_code == 200, failed.text
        assert failed.json()["state"] == "failed"

    @pytest.mark.parametrize("error", ["", "x" * 2001])
    def test_the_error_is_1_to_2000_characters(self, ada: Tenant, error: str) -> None:
        """400 invalid_request otherwise."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        claim(ada.api, token)
        assert_error(fail(ada.api, token, run_id, error), 400, "invalid_request")


class TestLeaseExpiry:
    """A worker that stops heartbeating loses its run to the queue, three times at most."""

    def test_expiry_requeues_up_to_three_attempts_then_fails(
        self, ada: Tenant, clock: FixedClock
    ) -> None:
        """Attempts 1 and 2 are requeued (claimable again); the third fails with
        ``lease expired``; the heartbeat of a lost run is 404."""
        worker_id, token = new_worker(ada)
        _, run_id = queued_run(ada, worker_id)
        for attempt in (1, 2, 3):
            claimed = claim(ada.api, token)
            assert claimed.status_code == 201, claimed.text
            assert claimed.json()["run"]["attempt"] == attempt
            clock.moment += timedelta(seconds=61)
            ada.api.facade.leases.expire()
            shown = ada.get_run(run_id).json()
            if attempt < 3:
                assert (shown["state"], shown["attempt"], shown["worker_id"]) == (
                    "queued",
                    attempt + 1,
                    None,
                )
                assert_error(heartbeat(ada.api, token, run_id), 404, "not_found")
        assert (shown["state"], shown["error"]) == ("failed", "lease expired")
        assert claim(ada.api, token).status_code == 204
