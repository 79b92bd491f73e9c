"""``GET /metrics``: Prometheus figures by route template, with no tenant in any label."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import pytest

from strongroom.adapters.metrics import http as metrics_http
from strongroom.adapters.runtime.blocking import unwrapped
from support.world import Api, bearer, make_client, make_facade


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` with exactly these labels, if present."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


class TestMetrics:
    """What an operator scrapes."""

    def test_requests_are_counted_by_route_template_method_and_status(self, api: Api) -> None:
        """Two liveness checks, a read of a missing backup and an unknown path: each
        counted under its template, never under an id."""
        token, _workspace_id = api.workspace_admin("ada@example.com")
        missing = uuid4()
        api.client.get("/healthz")
        api.client.get("/healthz")
        api.client.get(f"/v1/backups/{missing}", headers=bearer(token))
        api.client.get("/no/such/path")
        text = api.client.get("/metrics").text
        total = "strongroom_http_requests_total"
        assert _sample(text, total, route="/healthz", method="GET", status="200") == 2
        backup = {"route": "/v1/backups/{bid}", "method": "GET", "status": "404"}
        assert _sample(text, total, **backup) == 1
        assert _sample(text, total, route="unmatched", method="GET", status="404") == 1
        count = "strongroom_http_request_duration_seconds_count"
        assert _sample(text, count, route="/healthz", method="GET") == 2

    def test_no_label_names_a_tenant_or_a_credential(self, api: Api) -> None:
        """Ids, workspace ids and tokens never appear in the exposition."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        created = api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "Nightly", "kind": "manual"},
            headers=bearer(token),
        ).json()
        api.client.get(f"/v1/backups/{created['id']}", headers=bearer(token))
        response = api.client.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        for secret in (str(workspace_id), created["id"], token, "ada@example.com"):
            assert secret not in response.text
        routes = set(re.findall(r'route="([^"]*)"', response.text))
        assert "/v1/workspaces/{wid}/backups" in routes

    def test_each_application_counts_its_own_requests(self) -> None:
        """Two apps in one process (embedders, tests) keep separate figures."""
        with make_client(make_facade()) as first, make_client(make_facade()) as second:
            first.get("/healthz")
            text = second.get("/metrics").text
        total = "strongroom_http_requests_total"
        assert _sample(text, total, route="/healthz", method="GET", status="200") is None


class TestBoundedScrapes:
    """Issue 27, finding 6: scrapes are cheap and may require a token."""

    def test_the_service_figures_are_read_once_for_many_scrapes(
        self, api: Api, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Twenty scrapes in a row read the database's figures once; once they are
        ``SNAPSHOT_MAX_AGE`` old the next scrape reads them again (never more than 15 s
        old)."""
        facade = unwrapped(api.facade)
        reads = 0
        real = facade.metrics_snapshot

        async def counted() -> Any:
            nonlocal reads
            reads += 1
            return await real()

        monkeypatch.setattr(facade, "metrics_snapshot", counted)
        now = [1000.0]
        monkeypatch.setattr(metrics_http.time, "monotonic", lambda: now[0])
        for _ in range(20):
            assert "strongroom_statistics_up 1.0" in api.client.get("/metrics").text
        assert reads == 1
        now[0] += metrics_http.SNAPSHOT_MAX_AGE
        api.client.get("/metrics")
        assert reads == 2
        assert metrics_http.SNAPSHOT_MAX_AGE + metrics_http.SNAPSHOT_TIMEOUT <= 15

    def test_a_configured_token_is_required_as_a_bearer(self) -> None:
        """With ``STRONGROOM_METRICS_TOKEN``: 401 without it or with another; 200 with it."""
        with make_client(make_facade(), metrics_token="scrape-token-1") as client:
            assert client.get("/metrics").status_code == 401
            assert client.get("/metrics", headers=bearer("other")).status_code == 401
            answered = client.get("/metrics", headers=bearer("scrape-token-1"))
        assert answered.status_code == 200
        assert "strongroom_http_requests_total" in answered.text
