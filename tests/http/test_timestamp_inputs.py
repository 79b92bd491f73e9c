"""Timestamps clients send (an API key's ``expires_at``, the audit list's ``since``, the
time inside a list cursor) go through one parser: RFC 3339 with a zone, and an instant a
UTC datetime can hold; anything else is 400 ``invalid_request`` (contract sections 1, 10).

Each check runs on the in-memory store and on SQLite, whose codec converts instants to UTC
(where an out-of-range instant used to overflow into a 500).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID, uuid4

import httpx2
import pytest

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.entrypoints.bootstrap import bootstrap
from support.world import FAST_HASHER, Api, bearer, make_client, make_facade

# Local times whose UTC form falls outside the years 1..9999.
OUT_OF_RANGE = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-01:00"]


@pytest.fixture(params=["memory", "sqlite"])
def any_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """An HTTP client over a fresh in-memory or SQLite Strongroom."""
    if request.param == "memory":
        facade = make_facade()
        with make_client(facade) as client:
            yield Api(facade, client)
        return
    with SqliteDatabase(tmp_path / "strongroom.sqlite3") as database:
        database.migrate()
        clock, ids = SystemClock(), SecureIds()
        identity = BuiltinIdentityProvider(
            uow=database.uow, clock=clock, ids=ids, hasher=FAST_HASHER
        )
        facade = blocking(bootstrap(uow=database.uow, clock=clock, ids=ids, identity=identity))
        with make_client(facade) as client:
            yield Api(facade, client)


def assert_invalid(response: httpx2.Response, *fragments: str) -> None:
    """A 400 ``invalid_request`` whose message holds every fragment."""
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    for fragment in fragments:
        assert fragment in error["message"]


def _cursor(moment: str) -> str:
    raw = f"{moment}|{uuid4()}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class TestOutOfRangeInstants:
    """A timestamp that overflows when converted to UTC is 400, never 500."""

    @pytest.mark.parametrize("moment", OUT_OF_RANGE)
    def test_api_key_expiry_out_of_range_is_400(self, any_api: Api, moment: str) -> None:
        """``POST /v1/api-keys`` with such an ``expires_at``: 400 naming the field, and no
        key is created."""
        token, _ = any_api.workspace_admin("ada@example.com")
        response = any_api.client.post(
            "/v1/api-keys",
            json={"name": "ci", "permissions": [], "expires_at": moment},
            headers=bearer(token),
        )
        assert_invalid(response, "expires_at", "out of range")
        listed = any_api.client.get("/v1/api-keys", headers=bearer(token)).json()
        assert listed["data"] == []

    @pytest.mark.parametrize("moment", OUT_OF_RANGE)
    def test_a_forged_cursor_out_of_range_is_400(self, any_api: Api, moment: str) -> None:
        """A cursor whose time cannot be expressed in UTC is one this service never
        issued: 400 on every list that takes cursors."""
        token, workspace_id = any_api.workspace_admin("ada@example.com")
        for path in (
            f"/v1/workspaces/{workspace_id}/backups",
            f"/v1/workspaces/{workspace_id}/audit",
            "/v1/api-keys",
        ):
            response = any_api.client.get(
                path, params={"cursor": _cursor(moment)}, headers=bearer(token)
            )
            assert_invalid(response, "cursor")

    @pytest.mark.parametrize("moment", OUT_OF_RANGE)
    def test_audit_since_out_of_range_is_400(self, any_api: Api, moment: str) -> None:
        """``GET .../audit?since=`` with such a time: 400 naming ``since``."""
        token, workspace_id = any_api.workspace_admin("ada@example.com")
        response = any_api.client.get(
            f"/v1/workspaces/{workspace_id}/audit",
            params={"since": moment},
            headers=bearer(token),
        )
        assert_invalid(response, "since")

    def test_the_extreme_instants_themselves_are_accepted(self, any_api: Api) -> None:
        """The last instant a UTC datetime holds is a valid expiry; the first is a valid
        ``since`` (it lists everything)."""
        token, workspace_id = any_api.workspace_admin("ada@example.com")
        created = any_api.client.post(
            "/v1/api-keys",
            json={"name": "ci", "permissions": [], "expires_at": "9999-12-31T23:59:59+00:00"},
            headers=bearer(token),
        )
        assert created.status_code == 201, created.text
        assert created.json()["expires_at"] == "9999-12-31T23:59:59.000Z"
        listed = any_api.client.get(
            f"/v1/workspaces/{workspace_id}/audit",
            params={"since": "0001-01-01T00:00:00Z"},
            headers=bearer(token),
        )
        assert listed.status_code == 200, listed.text
        assert UUID(listed.json()["data"][0]["id"])
