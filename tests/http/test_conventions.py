"""HTTP conventions of contract 13 on the API's answers: ``Location`` on every 201 (and
202), ``Cache-Control: no-store`` on every answer carrying a token or a secret,
``Retry-After`` where a retry makes sense, and ``ETag`` / ``If-Match`` on PATCH (412
``precondition_failed``, nothing changes)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from strongroom.adapters.http.app import document as build_document
from strongroom.adapters.http.app import operations
from strongroom.adapters.identity.builtin import CLIENT_ID
from strongroom.adapters.memory.services import MemoryNamespaces
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.adapters.webkit.conventions import etag_of_object, if_match
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.errors import InvalidRequestError, UpstreamUnavailableError
from strongroom.ports.driving import Strongroom
from support.backups_http import CLOUD_COMPLETE, RETENTION
from support.backups_http import Tenant as BackupsTenant
from support.checks import assert_error
from support.pg_facade import postgres_facade
from support.world import (
    PASSWORD,
    Api,
    bearer,
    idp_access_token,
    idp_of,
    make_client,
    make_facade,
)


@attrs.frozen
class Tenant(BackupsTenant):
    """Ada's session with shortcuts for the other creations."""

    def post(self, path: str, body: Any = None, status: int = 201, **headers: str) -> Any:
        response = self.api.client.post(path, json=body, headers={**self.headers, **headers})
        assert response.status_code == status, response.text
        return response

    def backup_id(self, kind: str = "manual", name: str = "Nightly", **patch: Any) -> str:
        """A new backup, PATCHed with ``patch`` when given; its id."""
        backup_id: str = self.backup(name, kind)["id"]
        if patch:
            self.patched(backup_id, patch)
        return backup_id

    def events(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = self.audit().json()["data"]
        return data


@pytest.fixture
def ada(api: Api) -> Tenant:
    token, workspace_id = api.workspace_admin("ada@example.com")
    return Tenant(api, token, workspace_id)


# --------------------------------------------------------------------------------------
# Location


@attrs.frozen
class Created:
    """A creation's answer, the bearer to read its ``Location`` with, and how to find the
    created object's identity in the read."""

    response: Any
    reader: dict[str, str]
    same: Callable[[Any, Any], bool]


def same_id(created: Any, read: Any) -> bool:
    return bool(created["id"] == read["id"])


def create_workspace(ada: Tenant) -> Created:
    person = ada.api.person("wes@example.com")
    response = ada.post("/v1/workspaces", {"name": "Second"}, Authorization=f"Bearer {person}")
    scoped = ada.api.switch(person, UUID(response.json()["id"]))
    return Created(response, bearer(scoped), same_id)


def create_backup(ada: Tenant) -> Created:
    body = {"name": "nightly", "kind": "manual"}
    return Created(
        ada.post(f"/v1/workspaces/{ada.workspace_id}/backups", body), ada.headers, same_id
    )


def create_webhook(ada: Tenant) -> Created:
    body = {"url": "https://hooks.example.com/in", "events": ["run.failed"]}
    return Created(
        ada.post(f"/v1/workspaces/{ada.workspace_id}/webhooks", body), ada.headers, same_id
    )


def create_role(ada: Tenant) -> Created:
    body = {"slug": "ops", "name": "Ops", "permissions": ["backups:read"]}
    return Created(
        ada.post(f"/v1/workspaces/{ada.workspace_id}/roles", body),
        ada.headers,
        lambda created, read: created["slug"] == read["slug"],
    )


def create_invitation(ada: Tenant) -> Created:
    body = {"email": "eve@example.com", "role": "member"}
    return Created(
        ada.post(f"/v1/workspaces/{ada.workspace_id}/invitations", body), ada.headers, same_id
    )


def verify(ada: Tenant) -> Created:
    """A verify request creates nothing; its ``Location`` is the artifact it checks."""
    run_id = ada.post("/v1/runs", {"backup_id": ada.backup_id(retention=RETENTION)}).json()["id"]
    data = b"verified bytes"
    body = {"name": "v.bin", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    plan = ada.post(f"/v1/runs/{run_id}/upload-url", body).json()
    put = ada.api.client.put(plan["url"], content=data, headers=plan["headers"])
    assert put.status_code == 200, put.text
    ada.post(f"/v1/runs/{run_id}/confirm", status=200)
    response = ada.post(f"/v1/artifacts/{plan['artifact_id']}/verify", status=202)
    return Created(response, ada.headers, same_id)


def create_api_key(ada: Tenant) -> Created:
    body = {"name": "ci", "permissions": ["backups:read"]}
    return Created(ada.post("/v1/api-keys", body), ada.headers, same_id)


def create_worker(ada: Tenant) -> Created:
    return Created(ada.post("/v1/workers", {"name": "w1"}), ada.headers, same_id)


def start_run(ada: Tenant) -> Created:
    backup_id = ada.backup_id(retention=RETENTION)
    return Created(ada.post("/v1/runs", {"backup_id": backup_id}), ada.headers, same_id)


def upload_url(ada: Tenant) -> Created:
    run_id = ada.post("/v1/runs", {"backup_id": ada.backup_id(retention=RETENTION)}).json()["id"]
    data = b"artifact bytes"
    body = {"name": "db.dump", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return Created(
        ada.post(f"/v1/runs/{run_id}/upload-url", body),
        ada.headers,
        lambda _created, read: read["id"] == run_id,
    )


def upload_urls(ada: Tenant) -> Created:
    run_id = ada.post("/v1/runs", {"backup_id": ada.backup_id(retention=RETENTION)}).json()["id"]
    data = b"pack bytes"
    body = {"name": "pack-1", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return Created(
        ada.post(f"/v1/runs/{run_id}/upload-urls", {"artifacts": [body]}),
        ada.headers,
        lambda _created, read: read["id"] == run_id,
    )


def claim(ada: Tenant) -> Created:
    worker = ada.post("/v1/workers", {"name": "rack"}).json()
    backup_id = ada.backup_id("local", "Local", worker_id=worker["id"], retention=RETENTION)
    ada.post(f"/v1/backups/{backup_id}/trigger", status=202)
    response = ada.post("/v1/claims", {}, Authorization=f"Bearer {worker['token']}")
    return Created(response, ada.headers, lambda created, read: created["run"]["id"] == read["id"])


def trigger(ada: Tenant) -> Created:
    backup_id = ada.backup_id("cloud", "Cloud", **CLOUD_COMPLETE)
    return Created(ada.post(f"/v1/backups/{backup_id}/trigger", status=202), ada.headers, same_id)


def create_restore(ada: Tenant) -> Created:
    backup_id = ada.backup_id("cloud", "Restored", **CLOUD_COMPLETE)
    run_id = ada.post(f"/v1/backups/{backup_id}/trigger", status=202).json()["id"]
    data = b"archive bytes"
    body = {"name": "a.tar.zst", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    plan = ada.post(f"/v1/runs/{run_id}/upload-url", body).json()
    put = ada.api.client.put(plan["url"], content=data, headers=plan["headers"])
    assert put.status_code == 200, put.text
    ada.post(f"/v1/runs/{run_id}/confirm", status=200)
    restore = {
        "target": {"type": "s3", "endpoint": "https://s3.example.net", "bucket": "back"},
        "credentials": {"access_key_id": "id", "secret_access_key": "secret"},
    }
    response = ada.post(f"/v1/artifacts/{plan['artifact_id']}/restores", restore, status=202)
    return Created(response, ada.headers, same_id)


def same_user(created: Any, read: Any) -> bool:
    return bool(created["user"]["id"] == read["user"]["id"])


def create_session(ada: Tenant) -> Created:
    idp_token = idp_access_token(ada.api.facade, "sam@example.com")
    response = ada.api.client.post("/v1/auth/sessions", headers=bearer(idp_token))
    assert response.status_code == 201, response.text
    return Created(response, bearer(response.json()["token"]), same_user)


def switch(ada: Tenant) -> Created:
    person = ada.api.person("ada@example.com")
    body = {"workspace_id": str(ada.workspace_id)}
    response = ada.post("/v1/auth/switch", body, Authorization=f"Bearer {person}")
    return Created(response, bearer(response.json()["token"]), same_user)


def signup(ada: Tenant) -> Created:
    form = {"email": "una@example.com", "password": PASSWORD, "name": "Una"}
    response = ada.api.client.post("/idp/signup", data=form)
    assert response.status_code == 201, response.text
    idp = idp_of(ada.api.facade)
    grant = idp.start_device_authorization(CLIENT_ID, "http://testserver")
    idp.decide(grant.user_code, "una@example.com", PASSWORD, approve=True)
    token = idp.exchange_device_code(grant.device_code, CLIENT_ID).access_token
    session = ada.api.client.post("/v1/auth/sessions", headers=bearer(token)).json()["token"]
    return Created(
        response, bearer(session), lambda created, read: created["email"] == read["user"]["email"]
    )


CREATIONS: dict[tuple[str, str], Callable[[Tenant], Created]] = {
    ("POST", "/v1/workspaces"): create_workspace,
    ("POST", "/v1/workspaces/{wid}/backups"): create_backup,
    ("POST", "/v1/workspaces/{wid}/roles"): create_role,
    ("POST", "/v1/workspaces/{wid}/webhooks"): create_webhook,
    ("POST", "/v1/workspaces/{wid}/invitations"): create_invitation,
    ("POST", "/v1/api-keys"): create_api_key,
    ("POST", "/v1/workers"): create_worker,
    ("POST", "/v1/runs"): start_run,
    ("POST", "/v1/runs/{run_id}/upload-url"): upload_url,
    ("POST", "/v1/runs/{run_id}/upload-urls"): upload_urls,
    ("POST", "/v1/backups/{bid}/trigger"): trigger,
    ("POST", "/v1/claims"): claim,
    ("POST", "/v1/artifacts/{aid}/restores"): create_restore,
    ("POST", "/v1/artifacts/{aid}/verify"): verify,
    ("POST", "/v1/auth/sessions"): create_session,
    ("POST", "/v1/auth/switch"): switch,
    ("POST", "/idp/signup"): signup,
}


class TestLocation:
    """Every 201 (and the 202 of ``trigger`` and of a restore) carries ``Location``, a path a
    GET reads."""

    def test_every_creating_operation_is_covered(self) -> None:
        """The route table's 201 and 202 operations are exactly the ones tested below,
        but a drill's 202, read in its backup's drills list (a drill has no GET of its own
        yet)."""
        creating = {(op.method, op.path) for op in operations() if op.ok[0] in (201, 202)}
        without_a_read = {("POST", "/v1/backups/{bid}/drills")}
        assert creating - without_a_read == set(CREATIONS)

    @pytest.mark.parametrize("operation", list(CREATIONS), ids=" ".join)
    def test_location_reads_the_created_resource(
        self, ada: Tenant, operation: tuple[str, str]
    ) -> None:
        """The ``Location`` of the answer is an absolute path; a GET of it with a credential
        that may read it answers 200 with the created object (or the one it belongs to)."""
        created = CREATIONS[operation](ada)
        location = created.response.headers["location"]
        assert location.startswith("/")
        assert "{" not in location
        read = ada.api.client.get(location, headers=created.reader)
        assert read.status_code == 200, read.text
        assert created.same(created.response.json(), read.json())

    def test_an_idempotent_replay_carries_the_same_location(self, ada: Tenant) -> None:
        """A replay answered from the stored response has the first answer's Location."""
        path = f"/v1/workspaces/{ada.workspace_id}/backups"
        body = {"name": "once", "kind": "manual"}
        first = ada.post(path, body, **{"Idempotency-Key": "k-1"})
        again = ada.post(path, body, **{"Idempotency-Key": "k-1"})
        assert again.headers["location"] == first.headers["location"]
        assert first.headers["location"] == f"/v1/backups/{first.json()['id']}"

    def test_the_document_declares_location_on_each(self) -> None:
        document = build_document()
        for method, path in CREATIONS:
            operation = document["paths"][path][method.lower()]
            (status,) = [code for code in operation["responses"] if code in ("201", "202")]
            assert "Location" in operation["responses"][status]["headers"], (method, path)


# --------------------------------------------------------------------------------------
# Cache-Control: no-store


SECRET_FIELDS = {"token", "access_token", "device_code", "url", "parts"}


def answers_with_secrets() -> set[tuple[str, str]]:
    """Operations whose success schema has a field holding a token or a presigned URL."""
    document = build_document()
    schemas = document["components"]["schemas"]

    def fields(schema: Any) -> set[str]:
        if "$ref" in schema:
            return fields(schemas[schema["$ref"].rsplit("/", 1)[1]])
        found = set(schema.get("properties", {}))
        for variant in schema.get("oneOf", []) + schema.get("anyOf", []) + schema.get("allOf", []):
            found |= fields(variant)
        return found

    secret: set[tuple[str, str]] = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                content = response.get("content", {}).get("application/json")
                if status.startswith("2") and content and fields(content["schema"]) & SECRET_FIELDS:
                    secret.add((method.upper(), path))
    return secret


def no_store_calls(ada: Tenant) -> dict[tuple[str, str], Any]:
    """Each operation whose answer carries a token or a secret, called once."""
    facade = ada.api.facade
    client = ada.api.client
    backup_id = ada.backup_id(retention=RETENTION)
    run_id = ada.post("/v1/runs", {"backup_id": backup_id}).json()["id"]
    data = b"x" * 10
    plan = ada.post(
        f"/v1/runs/{run_id}/upload-url",
        {"name": "a.bin", "size": 10, "sha256": hashlib.sha256(data).hexdigest()},
    )
    assert client.put(plan.json()["url"], content=data, headers=plan.json()["headers"]).is_success
    ada.post(f"/v1/runs/{run_id}/confirm", status=200)
    artifact_id = plan.json()["artifact_id"]
    worker = ada.post("/v1/workers", {"name": "w"})
    device = client.post("/idp/device/code", data={"client_id": CLIENT_ID})
    idp = idp_of(facade)
    idp.decide(device.json()["user_code"], "ada@example.com", PASSWORD, approve=True)
    token = client.post(
        "/idp/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "client_id": CLIENT_ID,
            "device_code": device.json()["device_code"],
        },
    )
    person = ada.api.person("ada@example.com")
    hook = create_webhook(ada).response
    hook_path = f"/v1/webhooks/{hook.json()['id']}"
    return {
        ("POST", "/v1/workspaces/{wid}/webhooks"): hook,
        ("GET", "/v1/webhooks/{id}"): client.get(hook_path, headers=ada.headers),
        ("PATCH", "/v1/webhooks/{id}"): client.patch(
            hook_path, json={"events": ["backup.late"]}, headers=ada.headers
        ),
        ("POST", "/v1/auth/sessions"): client.post(
            "/v1/auth/sessions", headers=bearer(idp_access_token(facade, "ada@example.com"))
        ),
        ("POST", "/v1/auth/switch"): ada.post(
            "/v1/auth/switch",
            {"workspace_id": str(ada.workspace_id)},
            Authorization=f"Bearer {person}",
        ),
        ("POST", "/v1/api-keys"): ada.post("/v1/api-keys", {"name": "k", "permissions": []}),
        ("POST", "/v1/workers"): worker,
        ("POST", "/v1/workers/{id}/rotate"): ada.post(
            f"/v1/workers/{worker.json()['id']}/rotate", status=200
        ),
        ("POST", "/v1/runs/{run_id}/upload-url"): plan,
        ("POST", "/v1/artifacts/{aid}/download-url"): ada.post(
            f"/v1/artifacts/{artifact_id}/download-url", status=200
        ),
        ("POST", "/idp/device/code"): device,
        ("POST", "/idp/token"): token,
    }


class TestNoStore:
    """Answers carrying a token or a secret are ``Cache-Control: no-store``."""

    def test_every_answer_with_a_secret_is_no_store(self, ada: Tenant) -> None:
        """Every operation whose answer holds a token, a device code or a presigned URL
        (found in the document, so a new one cannot be forgotten) says ``no-store``."""
        calls = no_store_calls(ada)
        assert set(calls) == answers_with_secrets()
        for operation, response in calls.items():
            assert response.is_success, (operation, response.text)
            assert response.headers["cache-control"] == "no-store", operation

    def test_a_replay_is_no_store_too(self, ada: Tenant) -> None:
        """A replayed API key creation shows its token again, so it is no-store as well."""
        body = {"name": "k", "permissions": []}
        first = ada.post("/v1/api-keys", body, **{"Idempotency-Key": "r"})
        again = ada.post("/v1/api-keys", body, **{"Idempotency-Key": "r"})
        assert again.json()["token"] == first.json()["token"]
        assert again.headers["cache-control"] == "no-store"

    def test_ordinary_reads_are_not_marked(self, ada: Tenant) -> None:
        backup_id = ada.backup_id()
        response = ada.api.client.get(f"/v1/backups/{backup_id}", headers=ada.headers)
        assert "cache-control" not in response.headers


# --------------------------------------------------------------------------------------
# Retry-After


class FailingNamespaces(MemoryNamespaces):
    """Storage provisioning that fails as an unreachable store does."""

    async def provision_namespace(self, workspace_id: UUID) -> str:
        raise UpstreamUnavailableError("object storage is unavailable")

    async def ping(self) -> None:
        raise OSError("no route to host")


class TestRetryAfter:
    """502, 503 and 429 say when to retry."""

    def test_upstream_unavailable_says_when_to_retry(self) -> None:
        facade = make_facade(namespaces=FailingNamespaces())
        with make_client(facade) as client:
            api = Api(facade, client)
            response = client.post(
                "/v1/workspaces", json={"name": "Acme"}, headers=bearer(api.person("a@x.io"))
            )
            assert_error(response, 502, "upstream_unavailable")
            assert int(response.headers["retry-after"]) >= 1
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert int(ready.headers["retry-after"]) >= 1

    def test_a_rate_limit_says_when_to_retry(self, api: Api) -> None:
        idp = idp_of(api.facade)
        idp.add_account("rita@example.com", PASSWORD, "Rita")
        refused = None
        for _ in range(12):
            device = api.client.post("/idp/device/code", data={"client_id": CLIENT_ID}).json()
            refused = api.client.post(
                "/idp/device",
                data={
                    "user_code": device["user_code"],
                    "email": "rita@example.com",
                    "password": "wrong password!",
                    "decision": "approve",
                },
                headers={"Accept": "application/json"},
            )
        assert refused is not None
        assert_error(refused, 429, "rate_limited")
        assert int(refused.headers["retry-after"]) >= 1

    def test_other_refusals_carry_none(self, ada: Tenant) -> None:
        response = ada.api.client.get(f"/v1/backups/{uuid4()}", headers=ada.headers)
        assert_error(response, 404, "not_found")
        assert "retry-after" not in response.headers


# --------------------------------------------------------------------------------------
# ETag and If-Match


@attrs.frozen
class Patchable:
    """A PATCH route: where its object is (read and changed there) and two bodies that
    each change it."""

    path: str
    changes: tuple[dict[str, Any], dict[str, Any]]


def patchables(ada: Tenant) -> dict[str, Patchable]:
    """The object of every PATCH route, in ada's workspace."""
    client = ada.api.client
    wid = ada.workspace_id
    ada.post(f"/v1/workspaces/{wid}/roles", {"slug": "ops", "name": "Ops", "permissions": []})
    invitation = ada.post(
        f"/v1/workspaces/{wid}/invitations", {"email": "m@x.io", "role": "viewer"}
    )
    member = ada.api.person("m@x.io")
    accepted = client.post(
        f"/v1/invitations/{invitation.json()['id']}/accept", headers=bearer(member)
    )
    assert accepted.status_code == 200, accepted.text
    return {
        "backup": Patchable(
            f"/v1/backups/{ada.backup_id()}", ({"name": "first"}, {"name": "second"})
        ),
        "workspace": Patchable(f"/v1/workspaces/{wid}", ({"name": "One"}, {"name": "Two"})),
        "role": Patchable(
            f"/v1/workspaces/{wid}/roles/ops", ({"name": "Ops 1"}, {"name": "Ops 2"})
        ),
        "member": Patchable(
            f"/v1/workspaces/{wid}/members/{accepted.json()['user_id']}",
            ({"role": "member"}, {"role": "viewer"}),
        ),
    }


KINDS = ("backup", "workspace", "role", "member")


class TestConditionalPatch:
    """``PATCH`` with ``If-Match``: the ETag of a read (or of a PATCH answer)."""

    def etag(self, ada: Tenant, target: Patchable) -> str:
        """The object's current tag, from its read."""
        response = ada.api.client.get(target.path, headers=ada.headers)
        assert response.status_code == 200, response.text
        return str(response.headers["etag"])

    def patch(self, ada: Tenant, target: Patchable, body: dict[str, Any], tag: str | None) -> Any:
        headers = {**ada.headers, **({} if tag is None else {"If-Match": tag})}
        return ada.api.client.patch(target.path, json=body, headers=headers)

    @pytest.mark.parametrize("kind", KINDS)
    def test_a_matching_tag_changes_and_answers_the_new_tag(self, ada: Tenant, kind: str) -> None:
        target = patchables(ada)[kind]
        tag = self.etag(ada, target)
        assert tag.startswith('"')
        assert tag.endswith('"')
        changed = self.patch(ada, target, target.changes[0], tag)
        assert changed.status_code == 200, changed.text
        assert changed.headers["etag"] != tag
        again = ada.api.client.get(target.path, headers=ada.headers)
        assert again.headers["etag"] == changed.headers["etag"]
        assert again.json() == changed.json()

    @pytest.mark.parametrize("kind", KINDS)
    def test_a_stale_tag_is_412_and_nothing_changes(self, ada: Tenant, kind: str) -> None:
        """Someone changed the object after it was read: 412 ``precondition_failed``; the
        object stays as the other change left it and no audit event is written."""
        target = patchables(ada)[kind]
        stale = self.etag(ada, target)
        assert self.patch(ada, target, target.changes[0], None).status_code == 200
        before = self.etag(ada, target)
        events = ada.events()
        refused = self.patch(ada, target, target.changes[1], stale)
        assert_error(refused, 412, "precondition_failed", "has changed since it was read")
        (field,) = target.changes[0]
        read = ada.api.client.get(target.path, headers=ada.headers)
        assert {field: read.json()[field]} == target.changes[0]
        assert read.headers["etag"] == before
        assert ada.events() == events

    @pytest.mark.parametrize("kind", KINDS)
    def test_a_star_or_a_list_holding_the_tag_passes(self, ada: Tenant, kind: str) -> None:
        target = patchables(ada)[kind]
        assert self.patch(ada, target, target.changes[0], "*").status_code == 200
        tag = self.etag(ada, target)
        listed = f'"other", {tag}'
        assert self.patch(ada, target, target.changes[0], listed).status_code == 200

    def test_a_member_read_is_their_list_item(self, ada: Tenant) -> None:
        """``GET .../members/{id}``, the read that gives a member's tag, shows what the list
        shows; an unknown member is 404."""
        target = patchables(ada)["member"]
        read = ada.api.client.get(target.path, headers=ada.headers)
        listed = ada.api.client.get(
            f"/v1/workspaces/{ada.workspace_id}/members", headers=ada.headers
        ).json()["data"]
        assert read.json() in listed
        unknown = f"/v1/workspaces/{ada.workspace_id}/members/{uuid4()}"
        assert_error(ada.api.client.get(unknown, headers=ada.headers), 404, "not_found")

    def test_a_weak_tag_never_matches(self, ada: Tenant) -> None:
        target = patchables(ada)["backup"]
        tag = self.etag(ada, target)
        assert_error(self.patch(ada, target, {"name": "x"}, f"W/{tag}"), 412, "precondition_failed")

    @pytest.mark.parametrize("header", ["nope", '"open', "W/", ",", 'a"b"'])
    def test_a_malformed_if_match_is_invalid_request(self, ada: Tenant, header: str) -> None:
        target = patchables(ada)["backup"]
        assert_error(self.patch(ada, target, {"name": "x"}, header), 400, "invalid_request")

    def test_order_412_after_404_and_400(self, ada: Tenant) -> None:
        """404 (no such object) and 400 (malformed body) come before 412; 412 comes before
        the kind rules (422) and the billing gate (409)."""
        stale = '"0000"'
        missing = ada.api.client.patch(
            f"/v1/backups/{uuid4()}", json={"name": "x"}, headers={**ada.headers, "If-Match": stale}
        )
        assert_error(missing, 404, "not_found")
        target = patchables(ada)["backup"]
        assert_error(self.patch(ada, target, {"colour": "red"}, stale), 400, "invalid_request")
        kind_rule = {"schedule": {"cron": "0 3 * * *", "timezone": "UTC"}}  # manual: 422
        assert_error(self.patch(ada, target, kind_rule, stale), 412, "precondition_failed")

    def test_reads_of_single_objects_carry_an_etag(self, ada: Tenant) -> None:
        worker = ada.post("/v1/workers", {"name": "w"}).json()["id"]
        key = ada.post("/v1/api-keys", {"name": "k", "permissions": []}).json()["id"]
        run = ada.post("/v1/runs", {"backup_id": ada.backup_id(retention=RETENTION)}).json()["id"]
        for path in (f"/v1/workers/{worker}", f"/v1/api-keys/{key}", f"/v1/runs/{run}"):
            response = ada.api.client.get(path, headers=ada.headers)
            assert response.status_code == 200
            assert response.headers["etag"] == etag_of_object_json(response.content)

    def test_the_document_declares_if_match_and_412_on_every_patch(self) -> None:
        document = build_document()
        for item in document["paths"].values():
            for method, operation in item.items():
                names = {p.get("$ref", "").rsplit("/", 1)[-1] for p in operation["parameters"]}
                assert ("If-Match" in names) == (method == "patch")
                assert ("412" in operation["responses"]) == (method == "patch")


def etag_of_object_json(body: bytes) -> str:
    """The tag of a JSON body as sent (a digest of its exact bytes)."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


class TestAtomicity:
    """The If-Match check is made on the locked row, in the change's own transaction."""

    def test_two_changes_from_the_same_read_one_wins(self, facade: Strongroom) -> None:
        """Two PATCHes sent with the tag of the same read, concurrently: exactly one is
        applied, the other is 412."""
        core = unwrapped(facade)

        async def race() -> list[Any]:
            api_token = await core.sessions.sign_in(
                await asyncio.to_thread(idp_access_token, facade, "ada@example.com")
            )
            ada = await core.access.authenticate(api_token.token)
            workspace = await core.workspaces.create(ada, "Acme")
            ada = await core.access.authenticate(
                (await core.sessions.switch(ada, workspace.id)).token
            )
            backup = await core.backups.create(ada, workspace.id, "nightly", BackupKind.MANUAL)
            tag = etag_of_object(backup)
            precondition = lambda current: etag_of_object(current) == tag  # noqa: E731

            def rename(name: str) -> Any:
                changes = attrs.evolve(BackupChanges(), name=name)
                return core.backups.update(ada, backup.id, changes, precondition=precondition)

            return await asyncio.gather(rename("a"), rename("b"), return_exceptions=True)

        outcomes = asyncio.run(race())
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(failures) == 1
        assert getattr(failures[0], "code", None) == "precondition_failed"


class TestIfMatchParsing:
    @given(
        name=st.text(),
        others=st.lists(st.text(alphabet="0123456789abcdef", min_size=1, max_size=31), max_size=4),
        position=st.integers(0, 4),
    )
    def test_a_list_matches_exactly_when_it_holds_the_objects_tag(
        self, name: str, others: list[str], position: int
    ) -> None:
        """A list of strong tags accepts the object whose tag is in it, wherever, and
        refuses it when only other tags are listed."""
        obj = {"name": name}
        tags = [f'"{tag}"' for tag in others]
        without = if_match(request_with({"if-match": ", ".join(tags) or '"x"'}))
        tags.insert(min(position, len(tags)), etag_of_object(obj))
        holding = if_match(request_with({"if-match": ", ".join(tags)}))
        assert holding is not None
        assert without is not None
        assert holding(obj)
        assert not without(obj)

    def test_without_the_header_there_is_no_precondition(self) -> None:
        assert if_match(request_with({})) is None

    def test_an_empty_header_is_malformed(self) -> None:
        with pytest.raises(InvalidRequestError):
            if_match(request_with({"if-match": " , "}))


def request_with(headers: dict[str, str]) -> Request:
    raw = [(name.encode(), value.encode()) for name, value in headers.items()]
    return Request({"type": "http", "method": "PATCH", "headers": raw, "path": "/"})


def test_tags_of_reads_match_in_the_change_on_postgresql() -> None:
    """On PostgreSQL too (whose backup read is a joined statement of its own), the tag a
    read gives is the one the change finds on the locked row; a stale one is 412."""
    with postgres_facade("strongroom_etag") as facade, make_client(facade) as client:
        api = Api(facade, client)
        token, workspace_id = api.workspace_admin("ada@example.com")
        ada = Tenant(api, token, workspace_id)
        for kind, target in patchables(ada).items():
            tag = client.get(target.path, headers=ada.headers).headers["etag"]
            headers = {**ada.headers, "If-Match": tag}
            changed = client.patch(target.path, json=target.changes[0], headers=headers)
            assert changed.status_code == 200, (kind, changed.text)
            stale = client.patch(target.path, json=target.changes[1], headers=headers)
            assert_error(stale, 412, "precondition_failed")
