"""HTTP tests of ``GET /v1/backups/{bid}/runs`` and ``POST /v1/runs/{run_id}/cancel``
(contract 11): wire shape, pages and their cursor, the state parameter, tenant scoping's
404, and the order of checks. Listing order and filter, cancel's rules, permissions and
audit: ``tests/usecases/test_run_listing_and_cancelling.py`` and
``tests/usecases/test_run_rules.py``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from test_runs import RUN_FIELDS, Tenant

from strongroom.adapters.wire.present import present
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

    def test_pages_of_whole_runs_follow_next_cursor(self, ada: Tenant, clock: FixedClock) -> None:
        """Pages of ``limit`` whole runs in the list envelope, ``next_cursor`` to the end;
        ``?state=`` with no run of that state is an empty page (the order and the filter:
        ``tests/usecases/test_run_listing_and_cancelling.py::TestListing``)."""
        cloud = ada.active_cloud()
        made = queued_runs(ada, clock, cloud, 5)
        first = runs_of(ada, cloud, limit=2)
        assert first.status_code == 200, first.text
        assert len(first.json()["data"]) == 2
        assert first.json()["next_cursor"]
        listed = every_run(ada, cloud, limit=2)
        assert sorted(run["id"] for run in listed) == sorted(made)
        assert all(set(run) == RUN_FIELDS for run in listed)
        assert listed[0] == ada.get_run(listed[0]["id"]).json()
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


class TestCancel:
    """``POST /v1/runs/{run_id}/cancel``."""

    def test_a_cancel_answers_200_with_the_whole_run(self, ada: Tenant, clock: FixedClock) -> None:
        """200 with the whole run, ``finished_at`` in the API's form; an empty JSON body is
        accepted (what a cancel does and its audit:
        ``tests/usecases/test_run_listing_and_cancelling.py::TestCancel``)."""
        (run_id,) = queued_runs(ada, clock, ada.active_cloud(), 1)
        clock.moment += timedelta(seconds=5)
        response = cancel(ada, run_id, json={})
        assert response.status_code == 200, response.text
        run = response.json()
        assert set(run) == RUN_FIELDS
        assert (run["state"], run["cancel_requested"]) == ("cancelled", False)
        assert run["finished_at"] == "2030-01-02T12:00:06.000Z"
        assert ada.get_run(run_id).json() == run

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
