"""``/v1/workspaces/{wid}/health``, webhooks and ``strongroom_backups`` on ``/metrics``:
status codes, order of checks and wire shapes (the rules are tested through the facade in
``tests/usecases/test_assurance.py``)."""

from __future__ import annotations

from support.checks import assert_error
from support.world import Api, bearer

HEALTH_FIELDS = {"backup_id", "status", "last_success_at", "last_failure", "age_seconds"}
WEBHOOK_FIELDS = {"id", "url", "events", "created_at"}
DELIVERY_FIELDS = {
    "id",
    "webhook_id",
    "event",
    "state",
    "created_at",
    "next_attempt_at",
    "attempts",
    "payload",
}


def backup(api: Api, token: str, wid: object, body: dict[str, object]) -> str:
    created = api.client.post(
        f"/v1/workspaces/{wid}/backups",
        json={"name": "Nightly", "kind": "manual"},
        headers=bearer(token),
    )
    assert created.status_code == 201, created.text
    patched = api.client.patch(
        f"/v1/backups/{created.json()['id']}", json=body, headers=bearer(token)
    )
    assert patched.status_code == 200, patched.text
    return str(created.json()["id"])


class TestFreshnessAndHealth:
    def test_freshness_is_set_shown_and_refused_when_zero(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        bid = backup(api, ada, wid, {"freshness": {"max_age": "PT6H"}})
        shown = api.client.get(f"/v1/backups/{bid}", headers=bearer(ada)).json()
        assert shown["freshness"] == {"max_age": "PT6H"}
        zero = api.client.patch(
            f"/v1/backups/{bid}", json={"freshness": {"max_age": "PT0S"}}, headers=bearer(ada)
        )
        assert_error(zero, 400, "invalid_request", "freshness.max_age")
        unknown = api.client.patch(
            f"/v1/backups/{bid}",
            json={"freshness": {"max_age": "PT1H", "x": 1}},
            headers=bearer(ada),
        )
        assert_error(unknown, 400, "invalid_request")

    def test_the_health_list_is_paged_and_shaped(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        bid = backup(api, ada, wid, {"retention": {"expire_after": "P1D", "lock_for": "PT0S"}})
        answer = api.client.get(f"/v1/workspaces/{wid}/health?limit=10", headers=bearer(ada))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["next_cursor"] is None
        [item] = body["data"]
        assert set(item) == HEALTH_FIELDS
        assert (item["backup_id"], item["status"], item["age_seconds"]) == (bid, "never", None)

    def test_another_workspace_is_404_and_no_credential_401(self, api: Api) -> None:
        ada, _ = api.workspace_admin("ada@example.com")
        _, other = api.workspace_admin("bob@example.com", "Globex")
        assert_error(api.client.get(f"/v1/workspaces/{other}/health"), 401, "unauthenticated")
        assert_error(
            api.client.get(f"/v1/workspaces/{other}/health", headers=bearer(ada)), 404, "not_found"
        )

    def test_metrics_count_backups_by_status_without_tenants(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        backup(api, ada, wid, {"retention": {"expire_after": "P1D", "lock_for": "PT0S"}})
        api.client.portal.call(api.facade.health.evaluate) if hasattr(
            api.client, "portal"
        ) else None
        text = api.client.get("/metrics").text
        assert 'strongroom_backups{status="late"}' in text
        assert str(wid) not in text


class TestWebhookRoutes:
    def test_create_shows_the_secret_once(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        created = api.client.post(
            f"/v1/workspaces/{wid}/webhooks",
            json={"url": "https://hooks.example.com/in", "events": ["run.failed"]},
            headers=bearer(ada),
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert set(body) == WEBHOOK_FIELDS | {"secret"}
        assert body["secret"].startswith("whsec_")
        assert created.headers["location"] == f"/v1/webhooks/{body['id']}"
        read = api.client.get(f"/v1/webhooks/{body['id']}", headers=bearer(ada))
        assert read.status_code == 200
        assert set(read.json()) == WEBHOOK_FIELDS
        assert read.headers["cache-control"] == "no-store"
        listed = api.client.get(f"/v1/workspaces/{wid}/webhooks", headers=bearer(ada)).json()
        assert [set(item) for item in listed["data"]] == [WEBHOOK_FIELDS]

    def test_a_disallowed_literal_address_is_422_and_a_bad_url_400(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{wid}/webhooks"
        local = api.client.post(
            path, json={"url": "http://127.0.0.1/", "events": ["run.failed"]}, headers=bearer(ada)
        )
        assert_error(local, 422, "validation_failed", "url")
        bad = api.client.post(
            path, json={"url": "ftp://x/", "events": ["run.failed"]}, headers=bearer(ada)
        )
        assert_error(bad, 400, "invalid_request", "url")
        unknown = api.client.post(
            path, json={"url": "https://x.example/", "events": ["nope"]}, headers=bearer(ada)
        )
        assert_error(unknown, 400, "invalid_request", "events")

    def test_patch_ping_deliveries_redeliver_and_delete(self, api: Api) -> None:
        ada, wid = api.workspace_admin("ada@example.com")
        hook = api.client.post(
            f"/v1/workspaces/{wid}/webhooks",
            json={"url": "https://hooks.example.com/in", "events": ["run.failed"]},
            headers=bearer(ada),
        ).json()
        path = f"/v1/webhooks/{hook['id']}"
        patched = api.client.patch(path, json={"events": ["backup.late"]}, headers=bearer(ada))
        assert patched.status_code == 200, patched.text
        assert patched.json()["events"] == ["backup.late"]
        pinged = api.client.post(f"{path}/ping", headers=bearer(ada))
        assert pinged.status_code == 200, pinged.text
        assert set(pinged.json()) == DELIVERY_FIELDS
        assert pinged.json()["event"] == "webhook.ping"
        log = api.client.get(f"{path}/deliveries", headers=bearer(ada)).json()
        assert [d["id"] for d in log["data"]] == [pinged.json()["id"]]
        again = api.client.post(
            f"{path}/deliveries/{pinged.json()['id']}/redeliver", headers=bearer(ada)
        )
        assert again.status_code == 200, again.text
        assert again.json()["state"] == "pending"
        assert again.headers.get("cache-control") != "no-store"
        missing = api.client.post(f"{path}/deliveries/{hook['id']}/redeliver", headers=bearer(ada))
        assert_error(missing, 404, "not_found")
        assert api.client.delete(path, headers=bearer(ada)).status_code == 204
        assert_error(api.client.get(path, headers=bearer(ada)), 404, "not_found")
