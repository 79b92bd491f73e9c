"""``X-Request-ID`` on every response (contract sections 1 and 10)."""

from __future__ import annotations

import os
import re
from uuid import UUID

import pytest

from strongroom.adapters.webkit.request_ids import new_request_id
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import MemberWorkspace
from support.world import Api, bearer, make_client, make_facade

GENERATED = re.compile(r"req_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
PRINTABLE = "".join(chr(code) for code in range(ord("!"), ord("~") + 1))


class TestEveryResponse:
    """Success, refusal, router refusal and failure all carry the header."""

    def test_generated_ids_on_every_family(self, api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a client id, every response carries a fresh ``req_<uuid>``; error bodies
        repeat it."""
        broken = make_facade()
        token = Api(broken, api.client).person("z@example.com")

        def explode(_caller: Caller, _page: PageRequest) -> Page[MemberWorkspace]:
            raise RuntimeError("simulated bug")

        monkeypatch.setattr(broken.workspaces, "memberships", explode)
        with make_client(broken) as broken_client:
            failure = broken_client.get("/v1/workspaces", headers=bearer(token))
        assert failure.status_code == 500
        admin, workspace_id = api.workspace_admin("ada@example.com")
        other = api.person("bob@example.com")
        responses = [
            api.client.get("/healthz"),
            api.client.get("/readyz"),
            api.client.get("/v1/me", headers=bearer(admin)),
            api.client.post("/v1/workspaces", json={"name": "Two"}, headers=bearer(other)),
            api.client.delete("/v1/auth/sessions/current", headers=bearer(other)),
            api.client.get("/v1/workspaces/x", headers=bearer(admin)),
            api.client.get("/v1/me"),
            api.client.get(f"/v1/workspaces/{workspace_id}", headers=bearer(api.person("c@x.io"))),
            api.client.get("/v1/no-such-route"),
            api.client.put("/v1/me"),
            failure,
        ]
        assert [r.status_code for r in responses] == [
            200, 200, 200, 201, 204, 400, 401, 403, 404, 405, 500,
        ]  # fmt: skip
        seen = set()
        for response in responses:
            request_id = response.headers["x-request-id"]
            assert GENERATED.fullmatch(request_id), request_id
            UUID(request_id.removeprefix("req_"))
            if response.status_code >= 400:
                assert response.json()["error"]["request_id"] == request_id
            seen.add(request_id)
        assert len(seen) == len(responses)

    def test_client_id_echoed_on_every_family(self, api: Api) -> None:
        """A well-formed client id comes back on success, refusals and router refusals."""
        admin, _ = api.workspace_admin("ada@example.com")
        for method, path, headers, status in (
            ("GET", "/healthz", {}, 200),
            ("GET", "/v1/me", bearer(admin), 200),
            ("GET", "/v1/me", {}, 401),
            ("GET", "/nowhere", {}, 404),
            ("DELETE", "/v1/me", {}, 405),
        ):
            response = api.client.request(
                method, path, headers={**headers, "X-Request-ID": "trace-42"}
            )
            assert response.status_code == status
            assert response.headers["x-request-id"] == "trace-42"
            if status >= 400:
                assert response.json()["error"]["request_id"] == "trace-42"


class TestClientValues:
    """Which client values are echoed and which are replaced."""

    @pytest.mark.parametrize(
        "sent",
        ["a", "x" * 200, PRINTABLE, "req_abc", "!", "~", 'trace/1:2;3,4="5"\'{}'],
    )
    def test_printable_ascii_up_to_200_is_echoed(self, api: Api, sent: str) -> None:
        """1 to 200 characters from ``!`` to ``~`` are echoed unchanged."""
        response = api.client.get("/v1/me", headers={"X-Request-ID": sent})
        assert response.headers["x-request-id"] == sent
        assert response.json()["error"]["request_id"] == sent

    @pytest.mark.parametrize(
        "sent",
        [
            "",
            "has space",
            " leading",
            "x" * 201,
            "tab\there",
            "caf\u00e9".encode(),
            "\u00e9".encode("latin-1"),
            b"\x7f",
        ],
    )
    def test_anything_else_is_replaced(self, api: Api, sent: str | bytes) -> None:
        """Empty, too long, spaces, controls or non-ASCII: replaced by ``req_<uuid>``."""
        raw = sent if isinstance(sent, bytes) else sent.encode()
        response = api.client.get("/v1/me", headers={b"X-Request-ID": raw})
        request_id = response.headers["x-request-id"]
        assert GENERATED.fullmatch(request_id), request_id
        assert response.json()["error"]["request_id"] == request_id


class TestGeneratedIds:
    """The generator behind ``req_<uuid>``."""

    def test_they_are_distinct_version_4_uuids(self) -> None:
        """Twenty thousand in a row: every one a well-formed version-4 UUID, none twice."""
        made = [new_request_id() for _ in range(20_000)]
        assert all(GENERATED.fullmatch(request_id) for request_id in made)
        assert all(UUID(request_id[4:]).version == 4 for request_id in made[:100])
        assert len(set(made)) == len(made)

    def test_a_forked_child_draws_other_ids(self) -> None:
        """After a fork the child reseeds: it does not repeat its parent's next ids."""
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            os.close(reader)
            os.write(writer, new_request_id().encode())
            os._exit(0)
        os.close(writer)
        mine = new_request_id()
        with os.fdopen(reader) as pipe:
            theirs = pipe.read()
        os.waitpid(child, 0)
        assert GENERATED.fullmatch(theirs)
        assert theirs != mine
