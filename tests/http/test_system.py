"""Health, readiness, the permission catalog and the CLI configuration (contract sections
3, 9 and 10)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from strongroom.adapters.memory.services import MemoryNamespaces
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.domain.errors import UpstreamUnavailableError
from support.catalog import CATALOG
from support.world import Api, bearer, idp_access_token, make_client, make_facade


class DeadStorage(MemoryNamespaces):
    """Object storage that does not answer."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self._error = error

    async def ping(self) -> None:
        """Fail."""
        raise self._error


@pytest.fixture(
    params=[ConnectionError("refused"), UpstreamUnavailableError("storage down")],
    ids=["connection-error", "port-error"],
)
def dead_storage_api(request: pytest.FixtureRequest) -> Iterator[Api]:
    """An API whose object storage does not answer its ping."""
    facade = make_facade(namespaces=DeadStorage(request.param))
    with make_client(facade) as client:
        yield Api(facade, client)


class TestHealth:
    """``/healthz`` and ``/readyz`` (no authentication)."""

    def test_healthz(self, api: Api) -> None:
        """200 ``{"status": "ok"}`` while the process runs."""
        response = api.client.get("/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        assert response.headers["content-type"] == "application/json"

    def test_readyz_when_everything_answers(self, api: Api) -> None:
        """200 with every check ``ok``."""
        response = api.client.get("/readyz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "checks": {"database": "ok", "storage": "ok"}}

    def test_readyz_when_storage_fails(self, dead_storage_api: Api) -> None:
        """503 ``{"status": "unavailable", ...}`` naming the failing check; liveness stays
        200."""
        response = dead_storage_api.client.get("/readyz")
        assert response.status_code == 503
        assert response.json() == {
            "status": "unavailable",
            "checks": {"database": "ok", "storage": "unavailable"},
        }
        assert response.headers["x-request-id"].startswith("req_")
        assert dead_storage_api.client.get("/healthz").status_code == 200

    def test_health_needs_no_credential(self, api: Api) -> None:
        """A bad credential does not matter to health checks."""
        for path in ("/healthz", "/readyz"):
            assert api.client.get(path, headers=bearer("bks_nope")).status_code == 200


class TestPermissionCatalog:
    """``GET /v1/permissions``."""

    def test_catalog(self, api: Api) -> None:
        """23 slugs with descriptions, ``{data, next_cursor: null}``."""
        token = api.person("ada@example.com")
        response = api.client.get("/v1/permissions", headers=bearer(token))
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"data", "next_cursor"}
        assert body["next_cursor"] is None
        assert len(body["data"]) == 23
        assert {entry["slug"] for entry in body["data"]} == CATALOG
        for entry in body["data"]:
            assert set(entry) == {"slug", "description"}
            assert isinstance(entry["description"], str)
            assert entry["description"].strip()

    def test_any_session_may_read_it(self, api: Api) -> None:
        """Scoped or not, any role: the catalog needs no permission."""
        admin, _ = api.workspace_admin("ada@example.com")
        unscoped = api.person("bob@example.com")
        for token in (admin, unscoped):
            assert api.client.get("/v1/permissions", headers=bearer(token)).status_code == 200

    def test_catalog_needs_a_credential(self, api: Api) -> None:
        """No credential, or an identity-provider token: 401."""
        assert api.client.get("/v1/permissions").status_code == 401
        access = idp_access_token(api.facade, "ada@example.com")
        assert api.client.get("/v1/permissions", headers=bearer(access)).status_code == 401


class TestCliConfig:
    """``GET /v1/auth/cli/config`` (no authentication)."""

    def test_absolute_urls_from_the_request(self, api: Api) -> None:
        """Without a configured public URL, URLs are built from the request's host."""
        response = api.client.get("/v1/auth/cli/config")
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {
            "issuer",
            "client_id",
            "device_authorization_endpoint",
            "token_endpoint",
            "scopes",
            "authorization_endpoint",
        }
        assert body["authorization_endpoint"] == "http://testserver/idp/authorize"
        assert body["device_authorization_endpoint"] == "http://testserver/idp/device/code"
        assert body["token_endpoint"] == "http://testserver/idp/token"
        assert isinstance(body["scopes"], list)

    def test_public_url_wins(self) -> None:
        """``public_url`` is used when configured."""
        with make_client(make_facade(), public_url="https://vault.example.com/") as client:
            body = client.get("/v1/auth/cli/config").json()
        assert body["token_endpoint"] == "https://vault.example.com/idp/token"


class SilentDatabase(MemoryUnitOfWork):
    """A unit of work whose database does not answer a ping."""

    async def ping(self) -> None:
        """Fail."""
        raise UpstreamUnavailableError("database down")


def test_readyz_when_the_database_fails() -> None:
    """A database that does not answer: 503 with ``database: unavailable``."""
    store = MemoryStore()
    facade = make_facade(uow=lambda: SilentDatabase(store))
    with make_client(facade) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "unavailable", "storage": "ok"},
    }
