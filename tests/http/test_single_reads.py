"""Reads of one artifact and one invitation (contract 13: a creation's ``Location`` is a URL
a GET reads): the list's wire shape, a strong ``ETag``, the list's permission, and another
workspace's object not found."""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import uuid4

from support.backups_http import RETENTION, Tenant
from support.checks import assert_error
from support.world import bearer


def new_backup(tenant: Tenant, name: str = "nightly", lock_for: str = "P7D") -> str:
    """A manual backup with a retention; its id."""
    backup_id: str = tenant.backup(name=name)["id"]
    retention = {**RETENTION, "lock_for": lock_for}
    assert tenant.patch(backup_id, {"retention": retention}).status_code == 200
    return backup_id


def stored_artifact(tenant: Tenant, backup_id: str | None = None, data: bytes = b"dump") -> str:
    """A confirmed artifact in a new run of ``backup_id`` (or of a new backup); its id."""
    client, headers = tenant.api.client, tenant.headers
    backup_id = backup_id or new_backup(tenant)
    run_id = client.post("/v1/runs", json={"backup_id": backup_id}, headers=headers).json()["id"]
    body = {"name": "db.dump", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    plan = client.post(f"/v1/runs/{run_id}/upload-url", json=body, headers=headers).json()
    assert client.put(plan["url"], content=data, headers=plan["headers"]).status_code == 200
    assert client.post(f"/v1/runs/{run_id}/confirm", headers=headers).status_code == 200
    artifact_id: str = plan["artifact_id"]
    return artifact_id


def key_with(tenant: Tenant, *permissions: str) -> dict[str, str]:
    """The bearer of an API key of the tenant's workspace holding ``permissions``."""
    created = tenant.api.client.post(
        "/v1/api-keys",
        json={"name": "narrow", "permissions": list(permissions)},
        headers=tenant.headers,
    )
    assert created.status_code == 201, created.text
    return bearer(created.json()["token"])


class TestGetArtifact:
    """``GET /v1/artifacts/{aid}``."""

    def read(self, tenant: Tenant, artifact_id: str, headers: Any = None) -> Any:
        return tenant.api.client.get(
            f"/v1/artifacts/{artifact_id}", headers=headers or tenant.headers
        )

    def test_answers_the_artifact_as_the_list_shows_it(self, ada: Tenant) -> None:
        """200 with exactly the list's item, and a strong ``ETag``."""
        artifact_id = stored_artifact(ada)
        read = self.read(ada, artifact_id)
        assert read.status_code == 200, read.text
        listed = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/artifacts", headers=ada.headers
        ).json()["data"]
        assert [read.json()] == [item for item in listed if item["id"] == artifact_id]
        assert read.headers["etag"].startswith('"')

    def test_a_deleted_artifact_is_still_read(self, ada: Tenant) -> None:
        """A deleted artifact answers with ``state: deleted`` (the record stays)."""
        backup_id = new_backup(ada, lock_for="PT0S")
        stored_artifact(ada, backup_id, b"kept")
        gone = stored_artifact(ada, backup_id, b"gone")
        assert (
            ada.api.client.delete(f"/v1/artifacts/{gone}", headers=ada.headers).status_code == 204
        )
        assert self.read(ada, gone).json()["state"] == "deleted"

    def test_another_workspaces_artifact_and_an_unknown_id_are_not_found(
        self, ada: Tenant, bob: Tenant
    ) -> None:
        """Bob cannot tell Ada's artifact from an id that does not exist; a malformed id is
        400."""
        artifact_id = stored_artifact(ada)
        assert_error(self.read(bob, artifact_id), 404, "not_found")
        assert_error(self.read(bob, str(uuid4())), 404, "not_found")
        assert_error(self.read(ada, "not-a-uuid"), 400, "invalid_request")

    def test_needs_the_lists_permission(self, ada: Tenant) -> None:
        """A key without ``artifacts:read`` is refused; one with it reads."""
        artifact_id = stored_artifact(ada)
        narrow = key_with(ada, "backups:read")
        assert_error(self.read(ada, artifact_id, narrow), 403, "forbidden")
        reader = key_with(ada, "artifacts:read")
        assert self.read(ada, artifact_id, reader).status_code == 200


class TestGetInvitation:
    """``GET /v1/workspaces/{wid}/invitations/{id}``."""

    def invite(self, tenant: Tenant, email: str = "eve@example.com") -> Any:
        created = tenant.api.client.post(
            f"/v1/workspaces/{tenant.workspace_id}/invitations",
            json={"email": email, "role": "viewer"},
            headers=tenant.headers,
        )
        assert created.status_code == 201, created.text
        return created

    def test_location_reads_the_invitation(self, ada: Tenant) -> None:
        """The creation's ``Location`` is the invitation's URL; its GET answers the same
        fields as the creation, with an ``ETag``."""
        created = self.invite(ada)
        invitation = created.json()
        path = f"/v1/workspaces/{ada.workspace_id}/invitations/{invitation['id']}"
        assert created.headers["location"] == path
        read = ada.api.client.get(path, headers=ada.headers)
        assert read.status_code == 200, read.text
        assert read.json() == invitation
        assert read.headers["etag"].startswith('"')

    def test_another_workspaces_invitation_is_not_found(self, ada: Tenant, bob: Tenant) -> None:
        """Ada's invitation under Bob's workspace, and an unknown id, are 404."""
        invitation_id = self.invite(ada).json()["id"]
        base = f"/v1/workspaces/{bob.workspace_id}/invitations"
        foreign = ada.api.client.get(f"{base}/{invitation_id}", headers=bob.headers)
        assert_error(foreign, 404, "not_found")
        unknown = ada.api.client.get(f"{base}/{uuid4()}", headers=bob.headers)
        assert_error(unknown, 404, "not_found")

    def test_needs_invitations_read(self, ada: Tenant) -> None:
        """A key without ``invitations:read`` is refused."""
        invitation_id = self.invite(ada).json()["id"]
        path = f"/v1/workspaces/{ada.workspace_id}/invitations/{invitation_id}"
        refused = ada.api.client.get(path, headers=key_with(ada, "backups:read"))
        assert_error(refused, 403, "forbidden")
