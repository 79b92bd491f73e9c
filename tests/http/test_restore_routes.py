"""HTTP tests of restores (contract 11): ``POST /v1/artifacts/{aid}/restores`` and ``GET
/v1/restores/{id}``: status codes, ``Location``, the wire shape (no secret ever), and the
order of checks. What the runner does is in tests/usecases/test_restores.py and, on real
buckets and databases, tests/integration/test_restores_real.py."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.runtime.blocking import blocking_call, unwrapped
from strongroom.domain.billing import BillingState
from strongroom.ports.driving import Strongroom
from support.checks import assert_error
from support.pg_facade import postgres_facade
from support.world import Api, bearer, make_client, make_facade

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

    def restore(
        self,
        artifact_id: str,
        body: Any = None,
        token: str | None = None,
        key: str | None = None,
        request_id: str | None = None,
    ) -> Any:
        headers = bearer(token or self.token)
        if key is not None:
            headers["Idempotency-Key"] = key
        if request_id is not None:
            headers["X-Request-ID"] = request_id
        return self.api.client.post(
            f"/v1/artifacts/{artifact_id}/restores",
            json=BODY if body is None else body,
            headers=headers,
        )

    def created_events(self) -> list[dict[str, Any]]:
        """The workspace's ``restore.create`` audit events."""
        listing = self.api.client.get(
            f"/v1/workspaces/{self.workspace_id}/audit",
            params={"action": "restore.create"},
            headers=self.headers,
        )
        assert listing.status_code == 200, listing.text
        events: list[dict[str, Any]] = listing.json()["data"]
        return events


@pytest.fixture
def ada(api: Api) -> Workspace:
    return Workspace(api)


@pytest.fixture(params=["memory", "postgres"])
def any_api(request: pytest.FixtureRequest) -> Iterator[Api]:
    """An HTTP client over a fresh in-memory Strongroom or one on a scratch PostgreSQL
    database (where the key is reserved on the unique index, in the restore's transaction)."""
    if request.param == "memory":
        facade = make_facade()
        with make_client(facade) as client:
            yield Api(facade, client)
        return
    with postgres_facade("strongroom_restore_keys") as facade, make_client(facade) as client:
        yield Api(facade, client)


async def _take_queued(facade: Strongroom) -> list[UUID]:
    """Every queued restore of every workspace, taken (``running``) as a runner would take
    them, without running them: how many restores a request really queued."""
    taken: list[UUID] = []
    while True:
        async with facade.deps.uow() as uow:
            queued = await uow.restores.next_queued()
            if queued is None:
                return taken
            await uow.restores.update(queued.start(facade.now()))
            await uow.commit()
        taken.append(queued.id)


def take_queued(api: Api) -> list[str]:
    """``_take_queued`` on the API's facade, as id strings."""
    return [str(found) for found in blocking_call(_take_queued(unwrapped(api.facade)))]


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

    def test_an_unknown_target_type_is_validation_failed(self, ada: Workspace) -> None:
        """An unknown target type is read as a target the artifact refuses: 422 naming it
        (the target rules: ``tests/usecases/test_restores.py::TestCreate``)."""
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
            ({"target": {**TARGET, "bucket": "b"}, "credentials": KEYS}, "target.bucket"),
            ({"target": {**TARGET, "bucket": "10.0.0.1"}, "credentials": KEYS}, "target.bucket"),
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


class TestIdempotency:
    """``Idempotency-Key`` on a restore (contract 8): a client's retry after a lost answer
    must not start a second restore into the same target."""

    def test_a_repeat_returns_the_first_answer_and_queues_one_restore(self, any_api: Api) -> None:
        """Same key and body: the same 202, body and ``Location``, with the repeat's own
        request id; one restore queued, one ``restore.create`` event."""
        ada = Workspace(any_api)
        first = ada.restore(ada.cloud, key="restore-1", request_id="first")
        second = ada.restore(ada.cloud, key="restore-1", request_id="second")
        assert first.status_code == second.status_code == 202, second.text
        assert second.content == first.content
        assert second.headers["location"] == first.headers["location"]
        assert second.headers["x-request-id"] == "second"
        assert SECRET not in second.text
        assert take_queued(any_api) == [first.json()["id"]]
        [event] = ada.created_events()
        assert event["target"]["id"] == first.json()["id"]

    def test_a_repeat_after_the_restore_started_still_answers_the_first_response(
        self, any_api: Api
    ) -> None:
        """The replay is the first answer unchanged (``queued``), not the restore as it now
        is, which its ``GET`` shows; and it starts nothing."""
        ada = Workspace(any_api)
        first = ada.restore(ada.cloud, key="restore-1")
        assert take_queued(any_api) == [first.json()["id"]]
        replay = ada.restore(ada.cloud, key="restore-1")
        assert replay.status_code == 202
        assert replay.json() == first.json()
        assert replay.json()["state"] == "queued"
        now = any_api.client.get(first.headers["location"], headers=ada.headers).json()
        assert now["state"] == "running"
        assert take_queued(any_api) == []

    def test_the_same_key_with_another_body_is_a_conflict(self, any_api: Api) -> None:
        """Another target under the same key: 409 ``idempotency_conflict``, nothing more
        queued or audited."""
        ada = Workspace(any_api)
        first = ada.restore(ada.cloud, key="restore-1")
        assert first.status_code == 202
        other = {"target": {**TARGET, "bucket": "elsewhere"}, "credentials": KEYS}
        assert_error(ada.restore(ada.cloud, other, key="restore-1"), 409, "idempotency_conflict")
        assert take_queued(any_api) == [first.json()["id"]]
        assert len(ada.created_events()) == 1

    def test_without_a_key_each_request_queues_a_restore(self, ada: Workspace) -> None:
        """No key, no deduplication: two requests, two restores."""
        first, second = ada.restore(ada.cloud), ada.restore(ada.cloud)
        assert first.json()["id"] != second.json()["id"]
        assert sorted(take_queued(ada.api)) == sorted([first.json()["id"], second.json()["id"]])

    @pytest.mark.parametrize("key", ["", "k" * 256])
    def test_a_key_outside_1_to_255_characters_is_400(self, ada: Workspace, key: str) -> None:
        """An empty or overlong key: 400 ``invalid_request``, nothing queued."""
        assert_error(ada.restore(ada.cloud, key=key), 400, "invalid_request")
        assert take_queued(ada.api) == []
        assert ada.restore(ada.cloud, key="k" * 255).status_code == 202

    def test_a_refused_request_does_not_hold_its_key(self, ada: Workspace) -> None:
        """A restore refused for billing stores nothing under its key: once the workspace
        is unblocked the same key creates the restore."""
        facade = ada.api.facade
        facade.workspaces.set_billing_state(ada.workspace_id, BillingState.BLOCKED)
        assert_error(ada.restore(ada.cloud, key="k"), 409, "billing_restricted")
        facade.workspaces.set_billing_state(ada.workspace_id, BillingState.ACTIVE)
        created = ada.restore(ada.cloud, key="k")
        assert created.status_code == 202, created.text
        assert take_queued(ada.api) == [created.json()["id"]]

    def test_keys_belong_to_their_principal(self, api: Api, ada: Workspace) -> None:
        """Another credential of the same workspace using the same key gets a restore of
        its own, not Ada's answer."""
        robot = api.client.post(
            "/v1/api-keys",
            json={"name": "r", "permissions": ["backups:write", "artifacts:download"]},
            headers=ada.headers,
        ).json()["token"]
        mine = ada.restore(ada.cloud, key="shared")
        theirs = ada.restore(ada.cloud, token=robot, key="shared")
        assert theirs.status_code == 202, theirs.text
        assert theirs.json()["id"] != mine.json()["id"]

    def test_the_document_shows_the_header(self, api: Api) -> None:
        """The operation takes ``Idempotency-Key`` and documents its 409."""
        document = api.client.get("/openapi.json").json()
        operation = document["paths"]["/v1/artifacts/{aid}/restores"]["post"]
        names = {
            (parameter.get("$ref") or parameter["name"]).split("/")[-1]
            for parameter in operation["parameters"]
        }
        assert "Idempotency-Key" in names
        assert "idempotency_conflict" in operation["responses"]["409"]["description"]


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
