"""HTTP tests of the contract's order of checks (section 1) on every backup endpoint:
credential, path id, workspace, permission, body, 404, 422, 409."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import httpx2
import pytest

from strongroom.domain.billing import BillingState
from strongroom.domain.quotas import QuotaResource
from support.backups_http import (
    NOT_JSON,
    RETENTION,
    SCHEDULE,
    Tenant,
    viewer_in,
)
from support.checks import assert_error
from support.world import Api, bearer

ROUTES = [
    ("POST", "/v1/workspaces/{wid}/backups"),
    ("GET", "/v1/workspaces/{wid}/backups"),
    ("GET", "/v1/backups/{bid}"),
    ("PATCH", "/v1/backups/{bid}"),
    ("DELETE", "/v1/backups/{bid}"),
    ("POST", "/v1/backups/{bid}/pause"),
    ("POST", "/v1/backups/{bid}/resume"),
]
WRITES = [
    ("POST", "/v1/workspaces/{wid}/backups", "backup.create"),
    ("PATCH", "/v1/backups/{bid}", "backup.update"),
    ("DELETE", "/v1/backups/{bid}", "backup.delete"),
    ("POST", "/v1/backups/{bid}/pause", "backup.pause"),
    ("POST", "/v1/backups/{bid}/resume", "backup.resume"),
]
JSON = {"Content-Type": "application/json"}


def call(
    api: Api, method: str, path: str, token: str | None, content: bytes = NOT_JSON
) -> httpx2.Response:
    """``method path`` with a malformed JSON body (so a body check would answer 400)."""
    headers = dict(JSON) if token is None else {**JSON, **bearer(token)}
    return api.client.request(method, path, content=content, headers=headers)


class TestOrderOfChecks:
    """Contract section 1: credential, path id, workspace, permission, body, 404, 422, 409."""

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    @pytest.mark.parametrize("token", [None, "bks_not-a-real-token"])
    def test_a_credential_comes_first(
        self, api: Api, method: str, template: str, token: str | None
    ) -> None:
        """No or a bad credential is 401, before the malformed path id and body."""
        path = template.format(wid="not-a-uuid", bid="not-a-uuid")
        assert_error(call(api, method, path, token), 401, "unauthenticated")

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    def test_a_malformed_path_id_comes_before_the_workspace(
        self, api: Api, method: str, template: str
    ) -> None:
        """A path id that is not a UUID is 400, even for a session with no workspace."""
        token = api.person("una@example.com")
        path = template.format(wid="not-a-uuid", bid="not-a-uuid")
        name = "wid" if "{wid}" in template else "bid"
        assert_error(call(api, method, path, token), 400, "invalid_request", name)

    @pytest.mark.parametrize(("method", "template"), ROUTES)
    def test_a_workspace_must_be_selected(self, api: Api, method: str, template: str) -> None:
        """A session scoped to no workspace is 403 ``select a workspace first``."""
        token = api.person("una@example.com")
        path = template.format(wid=uuid4(), bid=uuid4())
        assert_error(call(api, method, path, token), 403, "forbidden", "select a workspace first")

    @pytest.mark.parametrize("method", ["POST", "GET"])
    def test_another_workspace_of_the_caller_is_wrong_workspace(
        self, api: Api, ada: Tenant, method: str
    ) -> None:
        """Ada is a member of a second workspace: naming it is 403 ``wrong_workspace``."""
        _, second = api.workspace_admin("ada@example.com", "Second")
        response = call(api, method, f"/v1/workspaces/{second}/backups", ada.token)
        assert_error(response, 403, "wrong_workspace")

    @pytest.mark.parametrize("method", ["POST", "GET"])
    def test_a_workspace_of_others_is_not_found(
        self, api: Api, ada: Tenant, bob: Tenant, method: str
    ) -> None:
        """A workspace Ada does not belong to is 404, like one that does not exist."""
        for wid in (bob.workspace_id, uuid4()):
            response = call(api, method, f"/v1/workspaces/{wid}/backups", ada.token)
            assert_error(response, 404, "not_found")

    @pytest.mark.parametrize(("method", "template", "action"), WRITES)
    def test_a_missing_permission_beats_a_bad_body_and_is_audited(
        self, api: Api, ada: Tenant, method: str, template: str, action: str
    ) -> None:
        """A viewer gets 403 naming ``backups:write``; the attempt is audited as denied."""
        record = ada.backup()
        token, viewer_id = viewer_in(api, ada.workspace_id, "vera@example.com")
        path = template.format(wid=ada.workspace_id, bid=record["id"])
        response = call(api, method, path, token)
        assert_error(response, 403, "forbidden", "missing permission backups:write")
        assert ada.read(record["id"]) == record
        denied = [
            event
            for event in ada.audit(action=action).json()["data"]
            if event["outcome"] == "denied"
        ]
        assert len(denied) == 1
        assert denied[0]["actor"] == {"type": "user", "id": str(viewer_id)}
        assert denied[0]["request_id"] == response.headers["x-request-id"]
        expected_target = None if action == "backup.create" else record["id"]
        assert denied[0]["target"] == {"type": "backup", "id": expected_target}

    @pytest.mark.parametrize(
        ("method", "suffix", "content"),
        [
            ("PATCH", "", b'{"kind": "cloud"}'),
            ("PATCH", "", NOT_JSON),
            ("POST", "/pause", b'{"now": true}'),
            ("POST", "/resume", NOT_JSON),
        ],
    )
    def test_a_bad_body_comes_before_an_unknown_backup(
        self, api: Api, ada: Tenant, method: str, suffix: str, content: bytes
    ) -> None:
        """The body is checked before the backup is looked up: 400, not 404."""
        path = f"/v1/backups/{uuid4()}{suffix}"
        assert_error(call(api, method, path, ada.token, content), 400, "invalid_request")

    def test_a_bad_create_body_comes_before_billing_and_quota(self, ada: Tenant) -> None:
        """A blocked, full workspace still answers 400 for a malformed creation."""
        ada.backup()
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "x"}), 400, "invalid_request", "kind")

    @pytest.mark.parametrize(
        "body",
        [
            {"worker_id": str(uuid4())},
            {"source": {"type": "ftp"}},
            {"schedule": SCHEDULE},
        ],
    )
    def test_an_unknown_backup_comes_before_the_kind_rules(
        self, ada: Tenant, body: dict[str, Any]
    ) -> None:
        """A well-formed PATCH of no backup is 404, whatever the kind rules would say."""
        assert_error(ada.patch(str(uuid4()), body), 404, "not_found")

    def test_kind_rules_come_before_billing(self, ada: Tenant) -> None:
        """A blocked workspace answers 422 for a PATCH its backup's kind refuses."""
        record = ada.backup("Nightly", "manual")
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(record["id"], {"schedule": SCHEDULE}), 422, "validation_failed")

    @pytest.mark.parametrize(
        "retention",
        [
            {"expire_after": "P1D", "lock_for": "P2D"},
            {"expire_after": "P2D", "lock_for": "P1D"},
        ],
    )
    def test_billing_comes_before_retention_conflicts(
        self, ada: Tenant, retention: dict[str, str]
    ) -> None:
        """Blocked: 409 ``billing_restricted`` before ``retention_immutable`` or the lock rule."""
        record = ada.backup("Nightly", "manual")
        ada.patched(record["id"], {"retention": RETENTION})
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(record["id"], {"retention": retention}), 409, "billing_restricted")

    def test_billing_comes_before_the_quota(self, ada: Tenant) -> None:
        """A blocked workspace at its quota answers ``billing_restricted``."""
        ada.api.facade.workspaces.set_quota(
            ada.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 1
        )
        ada.backup()
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "n", "kind": "manual"}), 409, "billing_restricted")
