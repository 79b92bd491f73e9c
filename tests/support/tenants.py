"""Two-tenant set-up shared by the generated isolation test and the schemathesis run: a
workspace with an object of every kind, reached through the HTTP API, and which pool of ids
each path parameter of the route table draws from."""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID, uuid4

import attrs

from strongroom.domain.backups import S3Source
from strongroom.domain.permissions import Permission
from strongroom.domain.restores import Restore
from support.world import Api, bearer


def pool_of(path: str, parameter: str) -> str:
    """Which kind of object the parameter names: the pool of ids to draw from."""
    if parameter != "id":
        return parameter
    for prefix, pool in (
        ("/v1/api-keys/", "api_key"),
        ("/v1/workers/", "worker"),
        ("/v1/invitations/", "invitation"),
        ("/v1/workspaces/{wid}/invitations/", "invitation"),
        ("/v1/workspaces/{wid}/members/", "user"),
        ("/v1/restores/", "restore"),
        ("/v1/webhooks/", "webhook"),
    ):
        if path.startswith(prefix):
            return pool
    raise AssertionError(f"no id pool for {{id}} in {path}: add one")


UUID_POOLS = (
    "wid",
    "bid",
    "run_id",
    "aid",
    "api_key",
    "worker",
    "invitation",
    "user",
    "restore",
    "webhook",
    "did",
)


@attrs.define
class Tenant:
    """One workspace, its objects (ids by pool) and a token of each credential kind."""

    name: str
    admin: str
    ids: dict[str, list[str]]
    tokens: dict[str, str]


def build_tenant(api: Api, name: str) -> Tenant:
    """A workspace with a custom role, a member, an invitation, a worker, an API key, a
    backup run by the worker, a run of it with an announced artifact, a webhook with a
    queued ping."""
    admin, workspace_id = api.workspace_admin(f"admin@{name}.example", name)
    headers = bearer(admin)
    base = f"/v1/workspaces/{workspace_id}"

    def post(path: str, body: dict[str, Any] | None = None, status: int = 201) -> Any:
        response = api.client.post(path, json=body, headers=headers)
        assert response.status_code == status, response.text
        return response.json()

    for slug in ("ops", f"only-{name}"):
        post(f"{base}/roles", {"slug": slug, "name": slug, "permissions": ["backups:read"]})
    invitation = post(f"{base}/invitations", {"email": f"member@{name}.example", "role": "ops"})
    member = api.person(f"member@{name}.example")
    accepted = api.client.post(f"/v1/invitations/{invitation['id']}/accept", headers=bearer(member))
    assert accepted.status_code == 200, accepted.text
    pending = post(f"{base}/invitations", {"email": f"later@{name}.example", "role": "viewer"})
    worker = post("/v1/workers", {"name": "rack"})
    key = post("/v1/api-keys", {"name": "all", "permissions": [p.value for p in Permission]})
    backup = post(f"{base}/backups", {"name": "files", "kind": "local"})
    patched = api.client.patch(
        f"/v1/backups/{backup['id']}",
        json={"worker_id": worker["id"], "retention": {"expire_after": "P1D", "lock_for": "PT0S"}},
        headers=headers,
    )
    assert patched.status_code == 200, patched.text
    run = post(f"/v1/backups/{backup['id']}/trigger", status=202)
    content = b"isolation"
    artifact = post(
        f"/v1/runs/{run['id']}/upload-url",
        {"name": "a.bin", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()},
    )
    # A restore record of the artifact (the runner never takes it: none runs here).
    restore = Restore.queued(
        uuid4(),
        workspace_id,
        UUID(artifact["artifact_id"]),
        S3Source(endpoint="https://s3.example.com", bucket=f"restored-{name}"),
        b"sealed",
        api.facade.deps.clock.now(),
    )
    with api.facade.deps.uow() as uow:
        uow.restores.add(restore)
        uow.commit()
    hook = post(f"{base}/webhooks", {"url": "https://hooks.example.com/", "events": ["run.failed"]})
    ping = post(f"/v1/webhooks/{hook['id']}/ping", status=200)
    users = [
        api.client.get("/v1/me", headers=bearer(token)).json()["principal"]["id"]
        for token in (admin, member)
    ]
    ids = {
        "wid": [str(workspace_id)],
        "bid": [backup["id"]],
        "run_id": [run["id"]],
        "aid": [artifact["artifact_id"]],
        "api_key": [key["id"]],
        "worker": [worker["id"]],
        "invitation": [invitation["id"], pending["id"]],
        "user": users,
        "slug": ["ops", f"only-{name}", "admin", "viewer"],
        "restore": [str(restore.id)],
        "webhook": [hook["id"]],
        "did": [ping["id"]],
    }
    return Tenant(
        name, admin, ids, {"session": admin, "api_key": key["token"], "worker": worker["token"]}
    )
