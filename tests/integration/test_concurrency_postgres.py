"""Concurrency over HTTP against PostgreSQL (contract sections 4, 5 and 8).

The service is the real one: ``create_app(Settings(database_url=...))`` served by uvicorn,
with the production pool and timeouts. Clients are real threads released together by a
barrier, each request on its own connection. The database, not luck, must keep quotas
exact, retention write-once and an Idempotency-Key to one creation.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import attrs
import httpx2
import pytest
from integration_world import (
    SECRET_KEY,
    Tenant,
    created_events,
    error_code,
    events,
    expect,
    new_tenant,
    postgres_url,
    setup_facade,
    stored_backups,
)
from live_server import LiveServer, all_at_once, client_for

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom

LIMIT = 10
REPEATS = 3


@attrs.frozen
class Service:
    """The served app, its URL, and a facade of the test's own on the same database."""

    url: str
    conninfo: str
    facade: Strongroom

    def client(self, connections: int = 10) -> httpx2.Client:
        return client_for(self.url, connections)

    def tenant(self) -> Tenant:
        with self.client() as client:
            return new_tenant(client, self.facade)


@pytest.fixture(scope="module")
def service(
    integration_conninfo: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """The service on PostgreSQL as ``STRONGROOM_DATABASE_URL`` configures it."""
    settings = Settings(
        database_url=postgres_url(integration_conninfo),
        data_dir=tmp_path_factory.mktemp("data"),
        secret_key=SECRET_KEY,
    )
    with (
        LiveServer(create_app(settings)) as server,
        PostgresDatabase.from_url(integration_conninfo, min_size=0, max_size=2) as database,
    ):
        yield Service(server.url, integration_conninfo, setup_facade(database))


def statuses(responses: list[httpx2.Response]) -> Counter[tuple[int, str]]:
    """How many responses had each status and error code (``""`` for successes)."""
    return Counter(
        (response.status_code, error_code(response) if response.status_code >= 400 else "")
        for response in responses
    )


class TestQuotaUnderConcurrency:
    """Parallel creators against a limit of 10."""

    @pytest.mark.parametrize("repeat", range(REPEATS))
    @pytest.mark.parametrize("creators", [50, 200])
    def test_parallel_creators_create_exactly_the_limit(
        self, service: Service, creators: int, repeat: int
    ) -> None:
        """Exactly 10 answers 201 and 10 backups exist; every other answer is 409
        ``quota_exceeded`` (never 11, never a 500 or 502)."""
        tenant = service.tenant()
        service.facade.workspaces.set_quota(
            tenant.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, LIMIT
        )
        with service.client(creators) as client:
            answers = all_at_once(
                client,
                creators,
                lambda client, index: tenant.create_backup(client, f"backup {repeat}-{index}"),
            )
            responses = [answer.response for answer in answers]
            assert statuses(responses) == {
                (201, ""): LIMIT,
                (409, "quota_exceeded"): creators - LIMIT,
            }
            created = {
                response.json()["name"] for response in responses if response.status_code == 201
            }
            assert sorted(tenant.backup_names(client)) == sorted(created)
            quotas = expect(
                client.get(f"/v1/workspaces/{tenant.workspace_id}/quotas", headers=tenant.headers),
                200,
            )
        refused = next(r for r in responses if r.status_code == 409).json()["error"]["message"]
        assert "backups_per_workspace" in refused
        usage = {"resource": "backups_per_workspace", "limit": LIMIT, "usage": LIMIT}
        assert usage in quotas["data"]
        stored = stored_backups(service.conninfo, tenant.workspace_id)
        assert set(stored) == created
        assert sorted(created_events(service.conninfo, tenant.workspace_id)) == sorted(
            stored.values()
        )


class TestWriteOnceRetentionUnderConcurrency:
    """Parallel PATCHes of different retention policies on one backup."""

    def test_exactly_one_policy_wins(self, service: Service) -> None:
        """One answers 200 and is the stored policy; the 49 others are 409
        ``retention_immutable``."""
        tenant = service.tenant()
        patches = 50
        policies = [
            {"expire_after": f"P{30 + index}D", "lock_for": "P7D"} for index in range(patches)
        ]
        with service.client(patches) as client:
            backup = expect(tenant.create_backup(client, "Nightly"), 201)
            path = f"/v1/backups/{backup['id']}"

            def patch(client: httpx2.Client, index: int) -> httpx2.Response:
                return client.patch(
                    path, json={"retention": policies[index]}, headers=tenant.headers
                )

            responses = [answer.response for answer in all_at_once(client, patches, patch)]
            assert statuses(responses) == {(200, ""): 1, (409, "retention_immutable"): patches - 1}
            winner = next(index for index, r in enumerate(responses) if r.status_code == 200)
            stored = expect(client.get(path, headers=tenant.headers), 200)
        assert responses[winner].json()["retention"] == policies[winner]
        assert stored["retention"] == policies[winner]
        assert stored["state"] == "active"
        assert stored == responses[winner].json()
        assert events(service.conninfo, tenant.workspace_id, "backup.update") == [
            UUID(backup["id"])
        ]


class TestIdempotencyUnderConcurrency:
    """Parallel requests carrying one Idempotency-Key."""

    def test_one_key_creates_one_backup(self, service: Service) -> None:
        """Every answer is 201 with the identical body; one backup and one audit event exist."""
        tenant = service.tenant()
        requests = 100
        key = {"Idempotency-Key": "create-nightly-once"}
        with service.client(requests) as client:
            responses = [
                answer.response
                for answer in all_at_once(
                    client,
                    requests,
                    lambda client, _index: tenant.create_backup(client, "Nightly", key),
                )
            ]
            assert statuses(responses) == {(201, ""): requests}
            bodies = {response.content for response in responses}
            assert len(bodies) == 1, bodies
            created: dict[str, Any] = json.loads(bodies.pop())
            assert tenant.backup_names(client) == ["Nightly"]
        stored = stored_backups(service.conninfo, tenant.workspace_id)
        assert stored == {"Nightly": UUID(created["id"])}
        assert created_events(service.conninfo, tenant.workspace_id) == [UUID(created["id"])]
