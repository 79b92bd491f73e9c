"""HTTP tests of restores (contract 11): ``POST /v1/artifacts/{aid}/restores`` and ``GET
/v1/restores/{id}``: status codes, ``Location``, the wire shape (no secret ever), and the
order of checks. What the runner does is in tests/usecases/test_restores.py and, on real
buckets and databases, tests/integration/test_restores_real.py."""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import uuid4

import pytest

from strongroom.domain.billing import BillingState
from support.checks import assert_error
from support.world import Api, bearer

SECRET = "restore-target-secret-9f2c"
TARGET = {"type": "s3", "endpoint": "https://s3.example.net", "bucket": "restored"}
KEYS = {"access_key_id": "AKIA-TARGET", "secret_access_key": SECRET}
BODY = {"target": TARGET, "credentials": KEYS}
RESTORE_FIELDS = {"id", "artifact_id", "state", "target", "error", "created_at", "finished_at"}


class Workspace:
    """An admin with a confirmed artifact of a cloud (s3) backup and of a manual one."""

    def __init__(self, api: Api, email: str = "ada@example.com", name: str = "Acme") -> None:
        self.api = api
        self.token, self.workspace_id = api.workspace_admin(email, name)
        self.cloud = self.artifact(
            "cloud",
            {
                "source": {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "src"},
                "credentials": {"access_key_id": "AKIA-SRC", "secret_access_key": "src-secret"},
            },
        )
        self.manual = self.artifact("manual", {})

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    def artifact(self, kind: str, patch: dict[str, Any]) -> str:
        client = self.api.client
        created = client.post(
            f"/v1/workspaces/{self.workspace_id}/backups",
            json={"name": kind, "kind": kind},
            headers=self.headers,
        )
        backup_id = created.json()["id"]
        retention = {"expire_after": "P30D", "lock_for": "PT0S"}
        patched = client.patch(
            f"/v1/backups/{backup_id}", json={**patch, "retention": retention}, headers=self.headers
        )
        assert patched.status_code == 200, patched.text
        if kind == "manual":
            run = client.post("/v1/runs", json={"backup_id": backup_id}, headers=self.headers)
        else:
            run = client.post(f"/v1/backups/{backup_id}/trigger", headers=self.headers)
        run_id = run.json()["id"]
        data = b"artifact bytes"
        plan = client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": "a", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
            headers=self.headers,
        ).json()
        assert client.put(plan["url"], content=data, headers=plan["headers"]).status_code == 200
        confirmed = client.post(f"/v1/runs/{run_id}/confirm", headers=self.headers)
        assert confirmed.status_code == 200, confirmed.text
        artifact_id: str = plan["artifact_id"]
        return artifact_id

    def restore(self, artifact_id: str, body: Any = None, token: str | None = None) -> Any:
        return self.api.client.post(
            f"/v1/artifacts/{artifact_id}/restores",
            json=BODY if body is None else body,
            headers=bearer(token or self.token),
        )


@pytest.fixture
def ada(api: Api) -> Workspace:
    return Workspace(api)


class TestCreate:
    """``POST /v1/artifacts/{aid}/restores``."""

    def test_202_with_location_and_no_secret(self, ada: Workspace) -> None:
        """A queued restore, ``Location`` to read it, the target shown, no credential."""
        response = ada.restore(ada.cloud)
        assert response.status_code == 202, response.text
        body = response.json()
        assert set(body) == RESTORE_FIELDS
        assert (body["state"], body["artifact_id"], body["error"]) == ("queued", ada.cloud, None)
        assert body["target"] == {**TARGET, "prefix": None}
        assert body["finished_at"] is None
        assert response.headers["location"].endswith(f"/v1/restores/{body['id']}")
        read = ada.api.client.get(response.headers["location"], headers=ada.headers)
        assert read.status_code == 200
        assert read.json() == body
        audit = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/audit", headers=ada.headers
        ).text
        for text in (response.text, read.text, audit):
            assert SECRET not in text
        assert "restore.create" in audit

    def test_a_manual_artifact_is_restored_by_its_client(self, ada: Workspace) -> None:
        """422 ``validation_failed`` naming download-url."""
        assert_error(ada.restore(ada.manual), 422, "validation_failed", "download-url")

    def test_the_target_type_must_be_the_source_type(self, ada: Workspace) -> None:
        """A database target for an s3 artifact, or an unknown type: 422."""
        database = {"type": "postgres", "host": "db.example.com", "port": 5432, "database": "x"}
        pg_keys = {"username": "u", "password": "p"}
        response = ada.restore(ada.cloud, {"target": database, "credentials": pg_keys})
        assert_error(response, 422, "validation_failed", "does not match")
        response = ada.restore(ada.cloud, {"target": {"type": "ftp"}, "credentials": KEYS})
        assert_error(response, 422, "validation_failed", "ftp")

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            ({"target": TARGET}, "credentials"),
            ({"credentials": KEYS}, "target"),
            ({**BODY, "extra": 1}, "extra"),
            ({"target": TARGET, "credentials": {"access_key_id": "a"}}, "secret_access_key"),
            ({"target": {**TARGET, "endpoint": "ftp://x"}, "credentials": KEYS}, "endpoint"),
        ],
    )
    def test_a_malformed_body_is_400(
        self, ada: Workspace, body: dict[str, Any], fragment: str
    ) -> None:
        """Missing or unknown fields, half credentials, a bad endpoint: 400 naming them."""
        assert_error(ada.restore(ada.cloud, body), 400, "invalid_request", fragment)

    def test_order_of_checks(self, ada: Workspace) -> None:
        """Permission (403) before body (400) before object (404) before kind rules (422)
        before billing (409)."""
        viewer = ada.api.client.post(
            "/v1/api-keys",
            json={"name": "v", "permissions": ["artifacts:download"]},
            headers=ada.headers,
        ).json()["token"]
        response = ada.restore(str(uuid4()), {"bad": 1}, token=viewer)
        assert_error(response, 403, "forbidden", "backups:write")
        assert_error(ada.restore(str(uuid4()), {"bad": 1}), 400, "invalid_request", "bad")
        assert_error(ada.restore(str(uuid4())), 404, "not_found", "artifact")
        assert_error(ada.restore("not-a-uuid"), 400, "invalid_request")
        ada.api.facade.workspaces.set_billing_state(ada.workspace_id, BillingState.BLOCKED)
        assert_error(ada.restore(ada.manual), 422, "validation_failed")
        assert_error(ada.restore(ada.cloud), 409, "billing_restricted", "blocked")

    def test_a_writer_without_download_is_refused(self, ada: Workspace) -> None:
        """``backups:write`` without ``artifacts:download``: 403 naming the missing one."""
        writer = ada.api.client.post(
            "/v1/api-keys",
            json={"name": "w", "permissions": ["backups:write"]},
            headers=ada.headers,
        ).json()["token"]
        assert_error(ada.restore(ada.cloud, token=writer), 403, "forbidden", "artifacts:download")


class TestRead:
    """``GET /v1/restores/{id}``."""

    def test_another_workspace_gets_the_same_404_as_for_a_random_id(
        self, api: Api, ada: Workspace
    ) -> None:
        """Bob cannot tell Ada's restore from an id that names nothing."""
        restore_id = ada.restore(ada.cloud).json()["id"]
        bob, _ = api.workspace_admin("bob@example.com", "Globex")
        answers = [
            api.client.get(f"/v1/restores/{rid}", headers=bearer(bob))
            for rid in (restore_id, str(uuid4()))
        ]
        for answer in answers:
            assert_error(answer, 404, "not_found")
        assert answers[0].json()["error"]["message"] == answers[1].json()["error"]["message"]

    def test_the_document_marks_credentials_write_only(self, api: Api) -> None:
        """``credentials`` is writeOnly; the 202 carries ``Location``."""
        document = api.client.get("/openapi.json").json()
        schema = document["components"]["schemas"]["RestoreCreate"]
        assert schema["properties"]["credentials"]["writeOnly"] is True
        operation = document["paths"]["/v1/artifacts/{aid}/restores"]["post"]
        assert "Location" in operation["responses"]["202"]["headers"]
        assert operation["x-permissions"] == ["backups:write"]
        assert operation["x-permissions-all"] == ["artifacts:download"]
