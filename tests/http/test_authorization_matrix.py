"""The generated authorization matrix (issue 4's acceptance).

For every authenticated ``/v1`` operation of the OpenAPI document, and every kind of
caller (each built-in role, a custom role, an API key with a random permission subset, a
worker, an unscoped session), the response is allowed exactly when the permission table
(the operation's ``x-permissions``) allows it, and otherwise the right 403 with the right
message. The table is the one the document publishes, so the documentation is tested too.

Allowed requests carry a body with an unknown field: every handler refuses it with 400
*after* authorization, so an allowed request changes nothing and says it was allowed.
Also here: the ``{wid}`` table (``wrong_workspace`` / 404) for every ``{wid}`` route and
for machine credentials.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any
from uuid import UUID, uuid4

import attrs
import httpx2
import pytest

from strongroom.adapters.http.app import operations
from strongroom.adapters.webkit.declare import Auth, Operation
from strongroom.domain.backups import S3Source
from strongroom.domain.permissions import BUILTIN_ROLES, WORKER_PERMISSIONS, Permission
from strongroom.domain.restores import Restore
from strongroom.domain.workspaces import Membership
from support.world import Api, bearer, make_client, make_facade

# Operations only a person may call (no permission; a machine credential gets 403).
HUMAN_ONLY = {
    ("GET", "/v1/workspaces"),
    ("POST", "/v1/workspaces"),
    ("POST", "/v1/auth/switch"),
    ("DELETE", "/v1/auth/sessions/current"),
    ("POST", "/v1/invitations/{id}/accept"),
}
# Operations only a worker may call (a person or an API key gets 403).
WORKER_ONLY = {("POST", "/v1/claims")}
CUSTOM_PERMISSIONS = frozenset(
    {
        Permission.BACKUPS_READ,
        Permission.BACKUPS_WRITE,
        Permission.MEMBERS_READ,
        Permission.ROLES_READ,
        Permission.WORKERS_READ,
        Permission.INVITATIONS_WRITE,
    }
)
CALLERS = ["admin", "member", "viewer", "custom", "api_key", "worker", "unscoped"]
MARKER = {"matrix_probe": 1}


def matrix_operations() -> list[Operation]:
    """Every operation a bearer credential calls (sign-in takes the IdP's token)."""
    return [op for op in operations() if op.auth == Auth.BEARER and op.path.startswith("/v1/")]


def key_permissions(operation: Operation) -> frozenset[Permission]:
    """A random subset of the catalog, seeded by the operation (reproducible)."""
    chooser = random.Random(f"{operation.method} {operation.path}")
    return frozenset(p for p in Permission if chooser.random() < 0.5)


@attrs.define
class World:
    """One workspace with an object of every kind, and a token for one caller."""

    api: Api
    workspace_id: UUID
    ids: dict[str, str]
    token: str
    permissions: frozenset[Permission] | None  # None: unscoped


def build_world(api: Api, caller: str, operation: Operation) -> World:
    """Ada's workspace: a custom role, a member, a worker with a backup, a triggered run of
    it with an announced artifact, an API key, an invitation; then the caller's token."""
    admin, workspace_id = api.workspace_admin("ada@example.com")
    headers = bearer(admin)
    base = f"/v1/workspaces/{workspace_id}"

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.client.post(path, json=body, headers=headers)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    post(
        f"{base}/roles",
        {"slug": "ops", "name": "Ops", "permissions": [p.value for p in CUSTOM_PERMISSIONS]},
    )
    worker = post("/v1/workers", {"name": "rack"})
    backup = post(f"{base}/backups", {"name": "files", "kind": "local"})
    patched = api.client.patch(
        f"/v1/backups/{backup['id']}",
        json={"worker_id": worker["id"], "retention": {"expire_after": "P1D", "lock_for": "PT0S"}},
        headers=headers,
    )
    assert patched.status_code == 200, patched.text
    triggered = api.client.post(f"/v1/backups/{backup['id']}/trigger", headers=headers)
    assert triggered.status_code == 202, triggered.text
    run_id = triggered.json()["id"]
    content = b"matrix"
    announced = post(
        f"/v1/runs/{run_id}/upload-url",
        {"name": "probe.bin", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()},
    )
    subset = key_permissions(operation)
    key = post("/v1/api-keys", {"name": "probe", "permissions": [p.value for p in subset]})
    target_key = post("/v1/api-keys", {"name": "target", "permissions": []})
    invitation = post(f"{base}/invitations", {"email": "una@example.com", "role": "viewer"})
    hook = post(f"{base}/webhooks", {"url": "https://hooks.example.com/", "events": ["run.failed"]})
    pinged = api.client.post(f"/v1/webhooks/{hook['id']}/ping", headers=headers)
    assert pinged.status_code == 200, pinged.text

    def join(email: str, role: str) -> tuple[str, str]:
        token = api.person(email)
        me = api.client.get("/v1/me", headers=bearer(token)).json()
        with api.facade.deps.uow() as uow:
            uow.memberships.add(
                Membership(
                    workspace_id, UUID(me["principal"]["id"]), role, api.facade.deps.clock.now()
                )
            )
            uow.commit()
        return token, me["principal"]["id"]

    _, target_member = join("vera@example.com", "viewer")
    restore = Restore.queued(
        uuid4(),
        workspace_id,
        UUID(announced["artifact_id"]),
        S3Source(endpoint="https://s3.example.com", bucket="restored"),
        b"sealed",
        api.facade.deps.clock.now(),
    )
    with api.facade.deps.uow() as uow:
        uow.restores.add(restore)
        uow.commit()
    permissions: frozenset[Permission] | None
    if caller == "admin":
        token, permissions = admin, BUILTIN_ROLES["admin"].permissions
    elif caller in ("member", "viewer"):
        token = api.switch(join(f"{caller}@example.com", caller)[0], workspace_id)
        permissions = BUILTIN_ROLES[caller].permissions
    elif caller == "custom":
        token = api.switch(join("cleo@example.com", "ops")[0], workspace_id)
        permissions = CUSTOM_PERMISSIONS
    elif caller == "api_key":
        token, permissions = key["token"], subset
    elif caller == "worker":
        token, permissions = worker["token"], WORKER_PERMISSIONS
    else:
        token, permissions = join("una@example.com", "admin")[0], None
    ids = {
        "wid": str(workspace_id),
        "bid": backup["id"],
        "run_id": run_id,
        "aid": announced["artifact_id"],
        "/v1/api-keys/{id}": target_key["id"],
        "/v1/workers/{id}": worker["id"],
        "/v1/workspaces/{wid}/members/{id}": target_member,
        "/v1/invitations/{id}/accept": invitation["id"],
        "/v1/workspaces/{wid}/invitations/{id}": invitation["id"],
        "/v1/restores/{id}": str(restore.id),
        "slug": "ops",
        "did": pinged.json()["id"],
        **{
            f"/v1/webhooks/{{id}}{rest}": hook["id"]
            for rest in ("", "/ping", "/deliveries", "/deliveries/{did}/redeliver")
        },
    }
    return World(api, workspace_id, ids, token, permissions)


def concrete_path(operation: Operation, ids: dict[str, str]) -> str:
    """The operation's path with the world's objects in it."""
    path = operation.path
    template = path.removesuffix("/rotate")
    path = path.replace("{wid}", ids["wid"]).replace("{bid}", ids["bid"])
    path = path.replace("{slug}", ids["slug"])
    path = path.replace("{run_id}", ids["run_id"]).replace("{aid}", ids["aid"])
    path = path.replace("{did}", ids["did"])
    if "{id}" in path:
        path = path.replace("{id}", ids[template if template in ids else operation.path])
    return path


def call(world: World, operation: Operation, path: str) -> httpx2.Response:
    """The request, with an unknown-field body where the operation takes one."""
    return world.api.client.request(
        operation.method,
        path,
        json=None if operation.method == "GET" else MARKER,
        headers=bearer(world.token),
    )


def expected_refusal(caller: str, operation: Operation, world: World) -> str | None:
    """The 403 message the table says, or None when the call is allowed."""
    key = (operation.method, operation.path)
    machine = caller in ("api_key", "worker")
    if key in HUMAN_ONLY:
        return "only a person" if machine else None
    if key in WORKER_ONLY:
        return None if caller == "worker" else "only a worker"
    if not operation.permissions:
        return None  # /v1/me, /v1/permissions: any credential
    if world.permissions is None:
        return "select a workspace first"
    if not any(p in world.permissions for p in operation.permissions):
        return f"missing permission {operation.permissions[0].value}"
    for needed in operation.also_permissions:
        if needed not in world.permissions:
            return f"missing permission {needed.value}"
    return None


CASES = [
    pytest.param(op, caller, id=f"{op.method} {op.path} as {caller}")
    for op in matrix_operations()
    for caller in CALLERS
]


@pytest.mark.parametrize(("operation", "caller"), CASES)
def test_the_permission_table_decides(operation: Operation, caller: str) -> None:
    """Allowed exactly when the table allows; otherwise 403 with the table's message."""
    facade = make_facade()
    with make_client(facade) as client:
        world = build_world(Api(facade, client), caller, operation)
        response = call(world, operation, concrete_path(operation, world.ids))
        refusal = expected_refusal(caller, operation, world)
        if refusal is None:
            assert response.status_code not in (401, 403, 404), response.text
            assert response.status_code < 500, response.text
            if operation.method != "GET" and response.status_code == 400:
                assert "matrix_probe" in response.json()["error"]["message"], response.text
        else:
            assert response.status_code == 403, response.text
            error = response.json()["error"]
            assert error["code"] == "forbidden"
            assert refusal in error["message"], error


def test_the_matrix_covers_every_authenticated_v1_route() -> None:
    """Every bearer-authenticated route of the app is in the matrix (the OpenAPI test
    already holds the document equal to the routes)."""
    covered = {(op.method, op.path) for op in matrix_operations()}
    assert ("POST", "/v1/api-keys") in covered
    assert ("POST", "/v1/invitations/{id}/accept") in covered
    assert len(covered) >= 35


WID_OPERATIONS = [op for op in matrix_operations() if "{wid}" in op.path]


@pytest.mark.parametrize(
    "operation", [pytest.param(op, id=f"{op.method} {op.path}") for op in WID_OPERATIONS]
)
def test_the_wid_table(operation: Operation) -> None:
    """Another workspace of the person: 403 ``wrong_workspace``; a workspace they are not
    in, or any other for a machine credential: 404."""
    facade = make_facade()
    with make_client(facade) as client:
        api = Api(facade, client)
        world = build_world(api, "api_key", operation)
        admin = api.switch(api.person("ada@example.com"), world.workspace_id)
        other = client.post("/v1/workspaces", json={"name": "Two"}, headers=bearer(admin))
        other_id = other.json()["id"]
        worker = client.post("/v1/workers", json={"name": "w2"}, headers=bearer(admin)).json()
        for wid, token, status, code in (
            (other_id, admin, 403, "wrong_workspace"),
            (str(uuid4()), admin, 404, "not_found"),
            (other_id, world.token, 404, "not_found"),
            (other_id, worker["token"], 404, "not_found"),
        ):
            ids = {**world.ids, "wid": wid}
            response = client.request(
                operation.method,
                concrete_path(operation, ids),
                json=None if operation.method == "GET" else MARKER,
                headers=bearer(token),
            )
            assert response.status_code == status, (wid, response.text)
            assert response.json()["error"]["code"] == code
