"""``GET /metrics``: the service-wide figures read at scrape time (runs and artifacts by
state, workspaces by stored bytes), with nothing in them that names a tenant."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.adapters.metrics.http import HttpMetrics
from strongroom.adapters.metrics.service import STORAGE_BUCKETS
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.domain.runs import RunState
from strongroom.ports.driven.statistics import ServiceStatistics
from support.world import Api, bearer


def samples(text: str) -> dict[str, float]:
    """Every sample of the exposition, by its name and labels as written."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def store_artifact(api: Api, token: str, backup_id: str, data: bytes) -> dict[str, Any]:
    """A run of ``backup_id`` with one uploaded, confirmed artifact; the run's body."""
    headers = bearer(token)
    run = api.client.post("/v1/runs", json={"backup_id": backup_id}, headers=headers).json()
    plan = api.client.post(
        f"/v1/runs/{run['id']}/upload-url",
        json={"name": "db.dump", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
        headers=headers,
    ).json()
    assert api.client.put(plan["url"], content=data).status_code == 200
    confirmed = api.client.post(f"/v1/runs/{run['id']}/confirm", headers=headers)
    assert confirmed.status_code == 200, confirmed.text
    body: dict[str, Any] = confirmed.json()
    return body


def new_backup(api: Api, token: str, workspace_id: object) -> str:
    """An active manual backup (a retention policy is all it needs)."""
    created = api.client.post(
        f"/v1/workspaces/{workspace_id}/backups",
        json={"name": "Nightly", "kind": "manual"},
        headers=bearer(token),
    )
    assert created.status_code == 201, created.text
    backup_id: str = created.json()["id"]
    patched = api.client.patch(
        f"/v1/backups/{backup_id}",
        json={"retention": {"expire_after": "P30D", "lock_for": "P1D"}},
        headers=bearer(token),
    )
    assert patched.status_code == 200, patched.text
    return backup_id


class TestServiceFigures:
    """What an operator sees of the whole service."""

    def test_runs_artifacts_and_storage_are_counted_without_tenants(self, api: Api) -> None:
        """Ada stores 3 bytes and 2 MiB in two runs and leaves a third run open; Bob stores
        nothing. The scrape counts 2 succeeded and 1 running run, 2 available artifacts and
        buckets the two workspaces by bytes; no id, email or token appears."""
        ada, ada_workspace = api.workspace_admin("ada@example.com")
        bob, bob_workspace = api.workspace_admin("bob@example.com", "Globex")
        backup_id = new_backup(api, ada, ada_workspace)
        first = store_artifact(api, ada, backup_id, b"abc")
        store_artifact(api, ada, backup_id, b"x" * (2 * 1024 * 1024))
        open_run = api.client.post("/v1/runs", json={"backup_id": backup_id}, headers=bearer(ada))
        text = api.client.get("/metrics").text
        figures = samples(text)
        assert figures["strongroom_statistics_up"] == 1
        assert figures['strongroom_runs{state="succeeded"}'] == 2
        assert figures['strongroom_runs{state="running"}'] == 1
        assert figures['strongroom_runs{state="failed"}'] == 0
        assert figures['strongroom_artifacts{state="available"}'] == 2
        assert figures['strongroom_artifacts{state="deleted"}'] == 0
        storage = "strongroom_workspace_storage_bytes"
        assert figures[f'{storage}_bucket{{le="0"}}'] == 1  # Bob's
        assert figures[f'{storage}_bucket{{le="1048576"}}'] == 1
        assert figures[f'{storage}_bucket{{le="16777216"}}'] == 2  # and Ada's 2 MiB + 3 B
        assert figures[f'{storage}_bucket{{le="+Inf"}}'] == 2
        assert figures[f"{storage}_gcount"] == 2
        assert figures[f"{storage}_gsum"] == 2 * 1024 * 1024 + 3
        for secret in (
            str(ada_workspace),
            str(bob_workspace),
            backup_id,
            first["id"],
            open_run.json()["id"],
            ada,
            bob,
            "ada@example.com",
        ):
            assert secret not in text
        labels = set(re.findall(r"(\w+)=\"", text))
        assert labels <= {"route", "method", "status", "state", "le"}

    def test_no_pool_figures_without_a_pool(self, api: Api) -> None:
        """The in-memory store has no connection pool: no pool family at all."""
        assert "strongroom_database_connections" not in api.client.get("/metrics").text

    def test_a_database_that_does_not_answer_leaves_the_request_figures(
        self, api: Api, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The scrape still answers 200 with the request counts, and says the service-wide
        figures are missing (``strongroom_statistics_up 0``)."""
        api.client.get("/healthz")

        async def down() -> None:
            raise UpstreamUnavailableError("the database does not answer")

        monkeypatch.setattr(unwrapped(api.facade), "metrics_snapshot", down)
        response = api.client.get("/metrics")
        assert response.status_code == 200
        figures = samples(response.text)
        assert figures["strongroom_statistics_up"] == 0
        healthz = 'strongroom_http_requests_total{method="GET",route="/healthz",status="200"}'
        assert figures[healthz] == 1
        assert "strongroom_runs" not in response.text


SIZES = st.lists(st.integers(0, 2**45), max_size=40)
COUNTS = st.dictionaries(st.sampled_from([state.value for state in RunState]), st.integers(0, 99))


class TestFamilies:
    """The exposition of any snapshot."""

    @given(sizes=SIZES, runs=COUNTS)
    def test_buckets_count_the_workspaces_at_or_below_each_bound(
        self, sizes: list[int], runs: dict[str, int]
    ) -> None:
        """Each ``le`` bucket holds the workspaces storing at most that many bytes; every
        run state is present, 0 when the snapshot has none of it."""
        snapshot = ServiceStatistics(runs, {}, {}, sizes, None)
        figures = samples(HttpMetrics().render(snapshot).decode())
        storage = "strongroom_workspace_storage_bytes"
        for bound in STORAGE_BUCKETS:
            expected = sum(size <= bound for size in sizes)
            assert figures[f'{storage}_bucket{{le="{bound}"}}'] == expected
        assert figures[f'{storage}_bucket{{le="+Inf"}}'] == len(sizes)
        assert figures[f"{storage}_gcount"] == len(sizes)
        assert figures[f"{storage}_gsum"] == float(sum(sizes))
        for state in RunState:
            assert figures[f'strongroom_runs{{state="{state.value}"}}'] == runs.get(state.value, 0)
