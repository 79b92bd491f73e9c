"""HTTP tests of ``drill: {schedule, target?}`` on a backup (contract 16): accepted on create
(201) and PATCH (200), shown on every read (null when unset), refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from support.checks import assert_error
from support.world import Api, bearer

DRILL = {"schedule": {"cron": "0 4 * * 0", "timezone": "Europe/Paris"}}
SHOWN = {**DRILL, "target": {"type": "service"}}


class Admin:
    def __init__(self, api: Api) -> None:
        self.client = api.client
        token, self.workspace_id = api.workspace_admin("ada@example.com", "Acme")
        self.headers = bearer(token)

    def create(self, body: dict[str, Any]) -> Any:
        return self.client.post(
            f"/v1/workspaces/{self.workspace_id}/backups", json=body, headers=self.headers
        )

    def patch(self, bid: str, body: dict[str, Any]) -> Any:
        return self.client.patch(f"/v1/backups/{bid}", json=body, headers=self.headers)


@pytest.fixture
def ada(api: Api) -> Admin:
    return Admin(api)


def test_a_cloud_backup_takes_a_drill_on_create_and_shows_it(ada: Admin) -> None:
    created = ada.create({"name": "db", "kind": "cloud", "drill": DRILL})
    assert created.status_code == 201, created.text
    assert created.json()["drill"] == SHOWN
    read = ada.client.get(f"/v1/backups/{created.json()['id']}", headers=ada.headers)
    assert read.json()["drill"] == SHOWN
    listed = ada.client.get(f"/v1/workspaces/{ada.workspace_id}/backups", headers=ada.headers)
    assert [b["drill"] for b in listed.json()["data"]] == [SHOWN]


def test_patch_sets_changes_and_removes_the_drill(ada: Admin) -> None:
    bid = ada.create({"name": "db", "kind": "cloud"}).json()["id"]
    assert ada.client.get(f"/v1/backups/{bid}", headers=ada.headers).json()["drill"] is None
    patched = ada.patch(bid, {"drill": {**DRILL, "target": {"type": "service"}}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["drill"] == SHOWN
    assert ada.client.get(f"/v1/backups/{bid}", headers=ada.headers).json()["drill"] == SHOWN
    removed = ada.patch(bid, {"drill": None})
    assert (removed.status_code, removed.json()["drill"]) == (200, None)


@pytest.mark.parametrize("kind", ["local", "manual"])
def test_a_drill_on_a_local_or_manual_backup_is_refused(ada: Admin, kind: str) -> None:
    assert_error(
        ada.create({"name": "x", "kind": kind, "drill": DRILL}), 422, "validation_failed", "drill"
    )
    bid = ada.create({"name": "x", "kind": kind}).json()["id"]
    assert_error(ada.patch(bid, {"drill": DRILL}), 422, "validation_failed", "drill")


def test_a_target_the_service_does_not_own_is_refused(ada: Admin) -> None:
    body = {**DRILL, "target": {"type": "postgres"}}
    bid = ada.create({"name": "db", "kind": "cloud"}).json()["id"]
    assert_error(ada.patch(bid, {"drill": body}), 422, "validation_failed", "drill.target")


@pytest.mark.parametrize(
    ("drill", "named"),
    [
        ({"schedule": {"cron": "61 * * * *", "timezone": "UTC"}}, "drill.schedule.cron"),
        ({"schedule": {"cron": "0 3 * * *", "timezone": "Mars/Base"}}, "drill.schedule.timezone"),
        ({"schedule": {"cron": "0 3 * * *"}}, "drill.schedule.timezone"),
        ({}, "drill.schedule"),
        ({**DRILL, "extra": 1}, "drill.extra"),
    ],
)
def test_a_malformed_drill_is_invalid_request_naming_the_field(
    ada: Admin, drill: dict[str, Any], named: str
) -> None:
    """Bad cron or time zone: 400 ``invalid_request``, as for the backup's own schedule."""
    bid = ada.create({"name": "db", "kind": "cloud"}).json()["id"]
    assert_error(ada.patch(bid, {"drill": drill}), 400, "invalid_request", named)
    assert_error(
        ada.create({"name": "x", "kind": "cloud", "drill": drill}), 400, "invalid_request", named
    )
