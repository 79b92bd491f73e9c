"""HTTP tests of reading backups: the list envelope and its pages, one backup, and
another workspace's backups (404 to every backup endpoint)."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from support.backups_http import (
    RECORD_FIELDS,
    Tenant,
    viewer_in,
)
from support.checks import assert_error
from support.world import Api, bearer


class TestList:
    """``GET /v1/workspaces/{wid}/backups``."""

    def test_lists_newest_first_in_the_envelope(self, ada: Tenant, bob: Tenant) -> None:
        """The list envelope holds only this workspace's backups, newest first."""
        names = ["first", "second", "third"]
        for name in names:
            ada.backup(name)
        bob.backup("elsewhere")
        response = ada.list()
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"data", "next_cursor"}
        assert body["next_cursor"] is None
        assert [b["name"] for b in body["data"]] == ["third", "second", "first"]
        assert all(set(b) == RECORD_FIELDS for b in body["data"])

    def test_an_empty_workspace_lists_nothing(self, ada: Tenant) -> None:
        """No backups: an empty page without a next cursor."""
        assert ada.list().json() == {"data": [], "next_cursor": None}

    @pytest.mark.parametrize("limit", [3])
    def test_pages_have_no_duplicates_or_gaps(self, ada: Tenant, limit: int) -> None:
        """Following ``next_cursor`` as issued visits every backup exactly once, newest
        first (any page size, instants shared or not:
        ``tests/usecases/test_listing_order.py``)."""
        created = [ada.backup(f"backup {n}")["id"] for n in range(7)]
        seen: list[str] = []
        pages = 0
        params = {"limit": str(limit)}
        while True:
            body = ada.list(**params).json()
            pages += 1
            assert 1 <= len(body["data"]) <= limit
            seen.extend(b["id"] for b in body["data"])
            if body["next_cursor"] is None:
                break
            params = {"limit": str(limit), "cursor": body["next_cursor"]}
        assert seen == list(reversed(created))
        assert pages == -(-len(created) // limit)

    def test_defaults_to_fifty(self, ada: Tenant) -> None:
        """Without ``limit`` a page holds at most 50 backups."""
        for n in range(51):
            ada.backup(f"backup {n}")
        body = ada.list().json()
        assert len(body["data"]) == 50
        assert body["next_cursor"] is not None
        assert len(ada.list(cursor=body["next_cursor"]).json()["data"]) == 1

    @pytest.mark.parametrize(
        ("params", "fragment"),
        [
            ({"limit": "0"}, "limit"),
            ({"limit": "201"}, "limit"),
            ({"limit": "-1"}, "limit"),
            ({"limit": "ten"}, "limit"),
            ({"limit": ""}, "limit"),
            ({"cursor": "not-a-cursor"}, "cursor"),
            ({"cursor": ""}, "cursor"),
        ],
    )
    def test_refuses_a_bad_limit_or_cursor(
        self, ada: Tenant, params: dict[str, str], fragment: str
    ) -> None:
        """A limit outside 1..200 or a cursor this service did not issue is 400."""
        ada.backup()
        assert_error(ada.list(**params), 400, "invalid_request", fragment)

    def test_accepts_the_largest_limit(self, ada: Tenant) -> None:
        """``limit=200`` is accepted."""
        ada.backup()
        assert len(ada.list(limit="200").json()["data"]) == 1


class TestRead:
    """``GET /v1/backups/{bid}``."""

    def test_unknown_backup_is_not_found(self, ada: Tenant) -> None:
        """An id that names no backup is 404 ``not_found``."""
        assert_error(ada.get(str(uuid4())), 404, "not_found")

    def test_another_workspaces_backup_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """Bob cannot tell Ada's backup from one that does not exist."""
        record = ada.backup()
        theirs = bob.get(record["id"])
        assert_error(theirs, 404, "not_found")
        assert theirs.json()["error"]["message"] == bob.get(str(uuid4())).json()["error"]["message"]

    @pytest.mark.parametrize("raw", ["not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g"])
    def test_refuses_an_id_that_is_not_a_uuid(self, ada: Tenant, raw: str) -> None:
        """A malformed path id is 400 ``invalid_request`` naming it."""
        assert_error(ada.get(raw), 400, "invalid_request", "bid")

    def test_a_viewer_can_read(self, api: Api, ada: Tenant) -> None:
        """Reading needs only ``backups:read``, which a viewer holds."""
        record = ada.backup()
        token, _ = viewer_in(api, ada.workspace_id, "vera@example.com")
        got = api.client.get(f"/v1/backups/{record['id']}", headers=bearer(token))
        assert got.status_code == 200
        assert got.json() == record
        listed = api.client.get(ada.backups_path, headers=bearer(token))
        assert [b["id"] for b in listed.json()["data"]] == [record["id"]]


class TestOtherWorkspaces:
    """An object of another workspace is 404 to every backup endpoint, and stays untouched."""

    @pytest.mark.parametrize(
        ("method", "suffix", "body"),
        [
            ("GET", "", None),
            ("PATCH", "", {"name": "Stolen"}),
            ("DELETE", "", None),
            ("POST", "/pause", None),
            ("POST", "/resume", None),
        ],
    )
    def test_another_workspaces_backup_is_not_found(
        self, ada: Tenant, bob: Tenant, method: str, suffix: str, body: Any
    ) -> None:
        """Bob's admin session gets 404 for Ada's backup; Ada's backup is unchanged."""
        record = ada.backup()
        response = bob.api.client.request(
            method, f"/v1/backups/{record['id']}{suffix}", json=body, headers=bob.headers
        )
        assert_error(response, 404, "not_found")
        assert ada.read(record["id"]) == record
        assert bob.list().json()["data"] == []
