"""Set-up and shortcuts for the HTTP tests of the backups endpoints: a workspace admin's
session (``Tenant``), a viewer, a clock that stands still, and request bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import attrs
import httpx2

from strongroom.domain.billing import BillingState
from strongroom.domain.workspaces import Membership
from support.world import Api, bearer

S3_SOURCE: dict[str, Any] = {
    "type": "s3",
    "endpoint": "https://s3.example.com:9000",
    "bucket": "prod-data",
}
S3_CREDENTIALS = {"access_key_id": "AKIA-ID-0d1e2f", "secret_access_key": "s3-secret-9f8e7d6c"}
PG_SOURCE: dict[str, Any] = {
    "type": "postgres",
    "host": "db.example.com",
    "port": 5432,
    "database": "app",
}
PG_CREDENTIALS = {"username": "backup-user", "password": "pg-secret-5a4b3c2d"}
CUSTOMER_S3: dict[str, Any] = {
    "type": "customer_s3",
    "endpoint": "https://minio.customer.example",
    "bucket": "vault",
    "prefix": "strongroom/",
}
DESTINATION_CREDENTIALS = {
    "access_key_id": "DEST-ID-77aa",
    "secret_access_key": "dest-secret-1q2w3e4r",
}
RETENTION = {"expire_after": "P30D", "lock_for": "P7D"}
SCHEDULE = {"cron": "0 3 * * *", "timezone": "Europe/Paris"}
RECORD_FIELDS = {
    "id",
    "workspace_id",
    "name",
    "kind",
    "state",
    "paused",
    "source",
    "has_credentials",
    "freshness",
    "drill",
    "schedule",
    "worker_id",
    "retention",
    "destination",
    "next_run_at",
    "created_at",
    "updated_at",
    # Contract 14: every backup has a format, and encryption (null for an archive one).
    "format",
    "encryption",
}
CLOUD_COMPLETE = {"source": S3_SOURCE, "credentials": S3_CREDENTIALS, "retention": RETENTION}
NOT_JSON = b"{not json"


@attrs.frozen
class Tenant:
    """An admin's session scoped to their own workspace, with shortcuts for backup calls."""

    api: Api
    token: str
    workspace_id: UUID

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    @property
    def backups_path(self) -> str:
        return f"/v1/workspaces/{self.workspace_id}/backups"

    def create(self, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return self.api.client.post(
            self.backups_path, json=body, headers={**self.headers, **(headers or {})}
        )

    def backup(self, name: str = "Nightly", kind: str = "manual") -> dict[str, Any]:
        """Create a backup and return its record."""
        response = self.create({"name": name, "kind": kind})
        assert response.status_code == 201, response.text
        record: dict[str, Any] = response.json()
        return record

    def list(self, **params: str) -> httpx2.Response:
        return self.api.client.get(self.backups_path, params=params, headers=self.headers)

    def get(self, backup_id: str) -> httpx2.Response:
        return self.api.client.get(f"/v1/backups/{backup_id}", headers=self.headers)

    def read(self, backup_id: str) -> dict[str, Any]:
        response = self.get(backup_id)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def patch(self, backup_id: str, body: Any) -> httpx2.Response:
        return self.api.client.patch(f"/v1/backups/{backup_id}", json=body, headers=self.headers)

    def patched(self, backup_id: str, body: Any) -> dict[str, Any]:
        response = self.patch(backup_id, body)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def action(self, backup_id: str, verb: str, **options: Any) -> httpx2.Response:
        return self.api.client.post(
            f"/v1/backups/{backup_id}/{verb}",
            headers={**self.headers, **options.pop("headers", {})},
            **options,
        )

    def delete(self, backup_id: str) -> httpx2.Response:
        return self.api.client.delete(f"/v1/backups/{backup_id}", headers=self.headers)

    def audit(self, **params: str) -> httpx2.Response:
        response = self.api.client.get(
            f"/v1/workspaces/{self.workspace_id}/audit", params=params, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response

    def set_billing(self, state: BillingState) -> None:
        self.api.facade.workspaces.set_billing_state(self.workspace_id, state)


def tenant_of(api: Api, email: str, name: str = "Acme") -> Tenant:
    """A new workspace administered by ``email``."""
    token, workspace_id = api.workspace_admin(email, name)
    return Tenant(api, token, workspace_id)


def viewer_in(api: Api, workspace_id: UUID, email: str) -> tuple[str, UUID]:
    """A session of ``email`` scoped to ``workspace_id`` as a viewer (no ``backups:write``)."""
    token = api.person(email)
    user_id = UUID(api.client.get("/v1/me", headers=bearer(token)).json()["principal"]["id"])
    with api.facade.deps.uow() as uow:
        uow.memberships.add(
            Membership(workspace_id, user_id, "viewer", api.facade.deps.clock.now())
        )
        uow.commit()
    return api.switch(token, workspace_id), user_id


class FixedClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment
