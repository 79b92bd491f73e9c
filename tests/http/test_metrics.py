"""``GET /metrics``: Prometheus figures by route template, with no tenant in any label."""

from __future__ import annotations

import re
from uuid import uuid4

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
