"""HTTP tests of ``GET /v1/backups/{bid}/runs`` and ``POST /v1/runs/{run_id}/cancel``
(contract 11): wire shape, newest first, the state filter, pages, tenant scoping, the
order of checks, the cancel of queued, running and finished runs, and its audit event."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from test_runs import RUN_FIELDS, Tenant

from strongroom.adapters.wire.present import present
from strongroom.domain.billing import BillingState
from strongroom.domain.runs import Progress, Run, RunState, RunTrigger
from support.backups_http import FixedClock
from support.checks import assert_error
from support.world import Api, bearer, make_client, make_facade

START = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)


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


@pytest.fixture
def bob(api: Api) -> Tenant:
    """Bob administers Globex."""
    return Tenant(api, *api.workspace_admin("bob@example.com", "Globex"))


def runs_of(tenant: Tenant, backup_id: str, token: str | None = None, **params: Any) -> Any:
    """``GET /v1/backups/{bid}/runs`` as the tenant (or ``token``)."""
    return tenant.api.client.get(
        f"/v1/backups/{backup_id}/runs", params=params, headers=bearer(token or tenant.token)
    )


def every_run(tenant: Tenant, backup_id: str, **params: Any) -> list[dict[str, Any]]:
    """Every run the list shows, page after page."""
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = params if cursor is None else {**params, "cursor": cursor}
        response = runs_of(tenant, backup_id, **query)
        assert response.status_code == 200, response.text
        seen.extend(response.json()["data"])
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return seen


def cancel(tenant: Tenant, run_id: str, token: str | None = None, **options: Any) -> Any:
    """``POST /v1/runs/{run_id}/cancel`` as the tenant (or ``token``)."""
    return tenant.api.client.post(
        f"/v1/runs/{run_id}/cancel", headers=bearer(token or tenant.token), **options
    )


def queued_runs(tenant: Tenant, clock: FixedClock, backup_id: str, count: int) -> list[str]:
    """``count`` triggered runs, one second apart; their ids, oldest first."""
    made = []
    for _ in range(count):
        clock.moment += timedelta(seconds=1)
        response = tenant.trigger(backup_id)
        assert response.status_code == 202, response.text
        made.append(response.json()["id"])
    return made


class TestList:
    """``GET /v1/backups/{bid}/runs``."""

    def test_runs_come_newest_first_page_by_page(self, ada: Tenant, clock: FixedClock) -> None:
        """Whole runs, newest first; pages of ``limit`` follow ``next_cursor`` to the end."""
        cloud = ada.active_cloud()
        made = queued_runs(ada, clock, cloud, 5)
        first = runs_of(ada, cloud, limit=2)
        assert first.status_code == 200, first.text
        assert len(first.json()["data"]) == 2
        assert first.json()["next_cursor"]
        listed = every_run(ada, cloud, limit=2)
        assert [run["id"] for run in listed] == made[::-1]
        assert all(set(run) == RUN_FIELDS for run in listed)
        assert listed[0] == ada.get_run(made[-1]).json()

    def test_the_state_filter_keeps_one_state(self, ada: Tenant, clock: FixedClock) -> None:
        """``?state=`` lists only that state's runs; a state with none gives an empty page."""
        cloud = ada.active_cloud()
        made = queued_runs(ada, clock, cloud, 3)
        assert cancel(ada, made[1]).status_code == 200
        cancelled = every_run(ada, cloud, state="cancelled")
        assert [(run["id"], run["state"]) for run in cancelled] == [(made[1], "cancelled")]
        queued = every_run(ada, cloud, state="queued", limit=1)
        assert [run["id"] for run in queued] == [made[2], made[0]]
        assert runs_of(ada, cloud, state="succeeded").json() == {"data": [], "next_cursor": None}

    @pytest.mark.parametrize("state", ["done", "QUEUED", ""])
    def test_an_unknown_state_is_invalid_request(self, ada: Tenant, state: str) -> None:
        """400 naming the parameter, never an empty page."""
        assert_error(
            runs_of(ada, ada.active_manual(), state=state), 400, "invalid_request", "state"
        )

    def test_another_workspaces_backup_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """Bob asking for Ada's backup gets the same 404 as for a backup that never existed."""
        backup = ada.active_manual()
        assert ada.start({"backup_id": backup}).status_code == 201
        foreign = assert_error(runs_of(bob, backup), 404, "not_found")
        missing = assert_error(runs_of(bob, str(uuid4())), 404, "not_found")
        assert foreign["message"] == missing["message"]

    def test_order_of_checks(self, ada: Tenant) -> None:
        """401, then 400 for the path id, then 403, then 400 for the query, then 404."""
        backup = ada.active_manual()
        viewer = ada.member("vera@example.com", "viewer")
        response = ada.api.client.get("/v1/backups/nope/runs", params={"state": "x"})
        assert_error(response, 401, "unauthenticated")
        assert_error(runs_of(ada, "nope", state="x"), 400, "invalid_request", "bid")
        assert runs_of(ada, backup, token=viewer).status_code == 200  # viewers read runs
        assert_error(runs_of(ada, str(uuid4()), state="x"), 400, "invalid_request", "state")
        assert_error(runs_of(ada, str(uuid4()), state="queued"), 404, "not_found")

    def test_listing_is_never_refused_for_billing(self, ada: Tenant) -> None:
        """A blocked workspace still reads its runs."""
        backup = ada.active_manual()
        run = ada.start({"backup_id": backup}).json()
        ada.set_billing(BillingState.BLOCKED)
        assert [listed["id"] for listed in every_run(ada, backup)] == [run["id"]]


class TestCancel:
    """``POST /v1/runs/{run_id}/cancel``."""

    def test_a_queued_run_is_cancelled_at_once(self, ada: Tenant, clock: FixedClock) -> None:
        """200 with the whole run, ``cancelled`` and finished now; audited ``run.cancel``
        with the caller as actor."""
        (run_id,) = queued_runs(ada, clock, ada.active_cloud(), 1)
        clock.moment += timedelta(seconds=5)
        response = cancel(ada, run_id)
        assert response.status_code == 200, response.text
        run = response.json()
        assert set(run) == RUN_FIELDS
        assert (run["state"], run["cancel_requested"]) == ("cancelled", False)
        assert run["finished_at"] == "2030-01-02T12:00:06.000Z"
        assert ada.get_run(run_id).json() == run
        (event,) = ada.audit("run.cancel")
        assert event["target"] == {"type": "run", "id": run_id}
        assert event["actor"]["type"] == "user"
        assert event["changes"] == {"state": {"from": "queued", "to": "cancelled"}}
        assert event["outcome"] == "success"

    def test_a_running_run_gets_cancel_requested(self, ada: Tenant) -> None:
        """It stays ``running`` with ``cancel_requested: true``; asking again answers the
        same run."""
        run = ada.start({"backup_id": ada.active_manual()}).json()
        response = cancel(ada, run["id"], json={})
        assert response.status_code == 200, response.text
        asked = response.json()
        assert (asked["state"], asked["cancel_requested"]) == ("running", True)
        assert asked["finished_at"] is None
        assert cancel(ada, run["id"]).json() == asked
        assert ada.get_run(run["id"]).json() == asked

    def test_a_finished_run_is_invalid_state(self, ada: Tenant, clock: FixedClock) -> None:
        """409 ``invalid_state``; the run is unchanged."""
        (run_id,) = queued_runs(ada, clock, ada.active_cloud(), 1)
        done = cancel(ada, run_id).json()
        assert_error(cancel(ada, run_id), 409, "invalid_state", "cancelled")
        assert ada.get_run(run_id).json() == done

    def test_another_workspaces_run_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """404 like a run that does not exist; Ada's run is untouched."""
        run = ada.start({"backup_id": ada.active_manual()}).json()
        foreign = assert_error(cancel(bob, run["id"]), 404, "not_found")
        missing = assert_error(cancel(bob, str(uuid4())), 404, "not_found")
        assert foreign["message"] == missing["message"]
        assert ada.get_run(run["id"]).json() == run

    def test_order_of_checks(self, ada: Tenant) -> None:
        """401, 400 path id, 403 permission (audited denied), 400 body, 404, 409."""
        run = ada.start({"backup_id": ada.active_manual()}).json()
        viewer = ada.member("vera@example.com", "viewer")
        assert_error(ada.api.client.post("/v1/runs/nope/cancel"), 401, "unauthenticated")
        assert_error(cancel(ada, "nope"), 400, "invalid_request", "run_id")
        assert_error(cancel(ada, run["id"], token=viewer, json={"x": 1}), 403, "forbidden")
        (denied,) = ada.audit("run.cancel")
        assert denied["outcome"] == "denied"
        assert_error(cancel(ada, str(uuid4()), json={"x": 1}), 400, "invalid_request")
        assert_error(cancel(ada, str(uuid4())), 404, "not_found")

    def test_a_member_with_trigger_cancels(self, ada: Tenant) -> None:
        """``backups:trigger`` alone is enough (the member role holds it)."""
        run = ada.start({"backup_id": ada.active_manual()}).json()
        member = ada.member("max@example.com", "member")
        response = cancel(ada, run["id"], token=member)
        assert response.status_code == 200, response.text
        assert response.json()["cancel_requested"] is True


class TestWireShape:
    """The run's lifecycle fields on the wire."""

    def test_progress_is_presented_as_contract_11_names_it(self) -> None:
        """``progress`` is ``{bytes_done, bytes_total, message, updated_at}``; the lease
        instant in the API's timestamp form."""
        moment = START + timedelta(milliseconds=1500)
        run = Run(
            uuid4(),
            uuid4(),
            uuid4(),
            RunState.RUNNING,
            RunTrigger.SCHEDULE,
            START,
            attempt=2,
            lease_expires_at=moment,
            cancel_requested=True,
            progress=Progress(10, None, "reading", moment),
        )
        shown = present(run)
        assert shown["attempt"] == 2
        assert shown["lease_expires_at"] == "2030-01-02T12:00:01.500Z"
        assert shown["cancel_requested"] is True
        assert shown["progress"] == {
            "bytes_done": 10,
            "bytes_total": None,
            "message": "reading",
            "updated_at": "2030-01-02T12:00:01.500Z",
        }
