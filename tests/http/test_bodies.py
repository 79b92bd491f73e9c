"""Request bodies: JSON only, strict shapes, optional bodies on actions (contract sections 1
and 10)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from strongroom.adapters.wire.converter import structure
from strongroom.domain.backups import BackupKind
from strongroom.domain.errors import InvalidRequestError
from support.world import Api, bearer, idp_access_token

ACCEPTED_CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "application/json;charset=UTF-8",
    "Application/JSON",
]
REFUSED_CONTENT_TYPES = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/jsonx",
    "application/json; charset=latin-1",
    "multipart/form-data; boundary=x",
]


def refused(response: Any, *fragments: str) -> str:
    """Assert a 400 ``invalid_request`` whose message contains ``fragments``."""
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    message: str = error["message"]
    for fragment in fragments:
        assert fragment in message
    return message


def workspaces_of(api: Api, token: str) -> list[str]:
    """The names in a person's workspace list."""
    listing = api.client.get("/v1/workspaces", headers=bearer(token)).json()
    return [item["name"] for item in listing["data"]]


class TestContentType:
    """A body must be sent as ``application/json``."""

    @pytest.mark.parametrize("content_type", ACCEPTED_CONTENT_TYPES)
    def test_json_is_accepted(self, api: Api, content_type: str) -> None:
        """``application/json``, with or without a UTF-8 charset, is accepted."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces",
            content=b'{"name": "Acme"}',
            headers={**bearer(token), "content-type": content_type},
        )
        assert response.status_code == 201, response.text

    @pytest.mark.parametrize("content_type", REFUSED_CONTENT_TYPES)
    def test_other_content_types_are_400(self, api: Api, content_type: str) -> None:
        """Any other content type is 400 and nothing is created."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces",
            content=b'{"name": "Acme"}',
            headers={**bearer(token), "content-type": content_type},
        )
        refused(response, "Content-Type")
        assert workspaces_of(api, token) == []

    def test_missing_content_type_is_400(self, api: Api) -> None:
        """A body without a content type is refused."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces", content=b'{"name": "Acme"}', headers=bearer(token)
        )
        refused(response, "Content-Type")


class TestJson:
    """The body must be one JSON object, exactly."""

    @pytest.mark.parametrize(
        "raw",
        [
            b"{",
            b"",
            b"not json",
            b'["name", "Acme"]',
            b'"Acme"',
            b"null",
            b'{"name": "Acme", "name": "Other"}',
            b'{"name": NaN}',
            b'{"name": Infinity}',
            b'{"name": "Acme"} trailing',
            b'{"name": "\xff"}',
        ],
    )
    def test_malformed_json_is_400(self, api: Api, raw: bytes) -> None:
        """Bad JSON, a non-object, duplicate keys, NaN/Infinity or bad UTF-8: 400."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces",
            content=raw,
            headers={**bearer(token), "content-type": "application/json"},
        )
        refused(response)
        assert workspaces_of(api, token) == []

    def test_duplicate_key_is_named(self, api: Api) -> None:
        """A duplicated key is refused, naming it."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces",
            content=b'{"name": "Acme", "name": "Other"}',
            headers={**bearer(token), "content-type": "application/json"},
        )
        refused(response, "name")

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"name": "Acme", "plan": "pro"}, "plan"),
            ({"name": "Acme", "id": "x"}, "id"),
            ({"nme": "Acme"}, "nme"),
        ],
    )
    def test_unknown_field_is_400_naming_it(
        self, api: Api, body: dict[str, Any], field: str
    ) -> None:
        """An unknown field is refused, not ignored, and the message names it."""
        token = api.person("ada@example.com")
        response = api.client.post("/v1/workspaces", json=body, headers=bearer(token))
        refused(response, field)
        assert workspaces_of(api, token) == []

    @pytest.mark.parametrize("name", [5, None, True, ["Acme"], {"v": "Acme"}, 1.5])
    def test_wrong_type_is_400(self, api: Api, name: Any) -> None:
        """A field of the wrong JSON type is 400 naming the field."""
        token = api.person("ada@example.com")
        response = api.client.post("/v1/workspaces", json={"name": name}, headers=bearer(token))
        refused(response, "name")

    def test_missing_field_is_400(self, api: Api) -> None:
        """A missing required field is 400 naming it."""
        token = api.person("ada@example.com")
        response = api.client.post("/v1/workspaces", json={}, headers=bearer(token))
        refused(response, "name")

    def test_required_body_cannot_be_absent(self, api: Api) -> None:
        """``POST /v1/workspaces`` without a body is 400."""
        token = api.person("ada@example.com")
        refused(api.client.post("/v1/workspaces", headers=bearer(token)))

    def test_switch_needs_its_body(self, api: Api) -> None:
        """``POST /v1/auth/switch`` needs ``{workspace_id}``: absent, empty or malformed is 400,
        and the session is not revoked."""
        token = api.person("ada@example.com")
        cases: list[dict[str, Any]] = [
            {},
            {"json": {}},
            {"json": {"workspace_id": "nope"}},
            {"json": {"workspace_id": 7}},
            {"json": {"workspace_id": "00000000-0000-0000-0000-000000000000", "x": 1}},
        ]
        for kwargs in cases:
            refused(api.client.post("/v1/auth/switch", headers=bearer(token), **kwargs))
        assert api.client.get("/v1/me", headers=bearer(token)).status_code == 200


class TestOptionalBodies:
    """Sessions' bodies are optional: no body or ``{}``; the content type is checked only
    when a body is present."""

    def test_sign_in_takes_no_body_or_an_empty_object(self, api: Api) -> None:
        """``POST /v1/auth/sessions`` with no body, or ``{}``, signs in."""
        cases: list[dict[str, Any]] = [{}, {"json": {}}]
        for kwargs in cases:
            token = idp_access_token(api.facade, "ada@example.com")
            response = api.client.post("/v1/auth/sessions", headers=bearer(token), **kwargs)
            assert response.status_code == 201, response.text

    def test_sign_in_refuses_fields_and_other_content_types(self, api: Api) -> None:
        """An unknown field or a non-JSON body on sign-in is 400 (each with a fresh token: a
        provider token is spent by its first exchange, contract 13)."""
        token = idp_access_token(api.facade, "ada@example.com")
        refused(
            api.client.post("/v1/auth/sessions", json={"remember": True}, headers=bearer(token)),
            "remember",
        )
        token = idp_access_token(api.facade, "ada@example.com")
        refused(
            api.client.post(
                "/v1/auth/sessions",
                content=b"{}",
                headers={**bearer(token), "content-type": "text/plain"},
            ),
            "Content-Type",
        )

    def test_sign_in_checks_the_credential_before_the_body(self, api: Api) -> None:
        """An invalid identity-provider token with a malformed body is 401, not 400."""
        response = api.client.post(
            "/v1/auth/sessions",
            content=b"{oops",
            headers={**bearer("bki_forged"), "content-type": "application/json"},
        )
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthenticated"

    def test_sign_out_takes_no_body_or_an_empty_object(self, api: Api) -> None:
        """``DELETE /v1/auth/sessions/current`` with no body, or ``{}``, signs out."""
        first = api.person("ada@example.com")
        second = api.person("ada@example.com")
        response = api.client.delete("/v1/auth/sessions/current", headers=bearer(first))
        assert response.status_code == 204
        assert response.content == b""
        assert (
            api.client.request(
                "DELETE", "/v1/auth/sessions/current", json={}, headers=bearer(second)
            ).status_code
            == 204
        )

    def test_sign_out_refuses_a_malformed_body(self, api: Api) -> None:
        """A body that is not ``{}``-compatible JSON is 400 and the session stays valid."""
        token = api.person("ada@example.com")
        cases: list[tuple[bytes, str]] = [
            (b'{"everywhere": true}', "application/json"),
            (b"bye", "text/plain"),
            (b"[]", "application/json"),
        ]
        for content, content_type in cases:
            response = api.client.request(
                "DELETE",
                "/v1/auth/sessions/current",
                content=content,
                headers={**bearer(token), "content-type": content_type},
            )
            refused(response)
        assert api.client.get("/v1/me", headers=bearer(token)).status_code == 200

    def test_sign_out_checks_the_credential_first(self, api: Api) -> None:
        """Without a credential, sign-out with a malformed body is 401."""
        response = api.client.request(
            "DELETE",
            "/v1/auth/sessions/current",
            content=b"bye",
            headers={"content-type": "text/plain"},
        )
        assert response.status_code == 401


class TestBodiesWithoutFields:
    """A DELETE takes no fields: a body, when sent, is still JSON and ``{}``-compatible."""

    def test_delete_workspace_refuses_a_non_json_body(self, api: Api) -> None:
        """``DELETE /v1/workspaces/{wid}`` with a text body or a field: 400, nothing deleted;
        with ``{}``: 204."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}"
        cases: list[tuple[bytes, str]] = [
            (b"now", "text/plain"),
            (b'{"force": true}', "application/json"),
        ]
        for content, content_type in cases:
            headers = {**bearer(token), "content-type": content_type}
            refused(api.client.request("DELETE", path, content=content, headers=headers))
        assert api.client.get(path, headers=bearer(token)).status_code == 200
        response = api.client.request("DELETE", path, json={}, headers=bearer(token))
        assert response.status_code == 204


@attrs.frozen
class KindBody:
    """A body with one enum field."""

    kind: BackupKind


class TestStructureEnums:
    """Enum fields of request bodies are parsed strictly, to the enum itself."""

    def test_a_string_enum_field_becomes_the_enum_and_refuses_other_values(self) -> None:
        """`{"kind": "cloud"}` gives BackupKind.CLOUD; `"nope"` and `5` are invalid_request."""
        assert structure({"kind": "cloud"}, KindBody).kind is BackupKind.CLOUD
        for bad in ("nope", 5, None):
            with pytest.raises(InvalidRequestError, match="kind"):
                structure({"kind": bad}, KindBody)


class TestUnicode:
    """Text that cannot be stored as UTF-8 is refused before anything is written."""

    def test_a_lone_surrogate_escape_in_a_nested_string_is_invalid_request(self, api: Api) -> None:
        """`"\\ud800"` inside source.bucket gives 400 and leaves the backup unchanged."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        created = api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "db", "kind": "cloud"},
            headers=bearer(token),
        )
        backup_id = created.json()["id"]
        body = (
            b'{"source": {"type": "s3", "endpoint": "https://s3.example.com", '
            b'"bucket": "b\\ud800"}}'
        )
        patched = api.client.patch(
            f"/v1/backups/{backup_id}",
            content=body,
            headers={**bearer(token), "Content-Type": "application/json"},
        )
        assert patched.status_code == 400
        assert patched.json()["error"]["code"] == "invalid_request"
        assert (
            api.client.get(f"/v1/backups/{backup_id}", headers=bearer(token)).json()["source"]
            is None
        )


# A field name of 900 KB (the body cap is 1 MiB): no error may echo it whole.
HUGE = "f" * 900_000
SHOWN = "f" * 100


class TestFieldNamesInMessages:
    """Contract 13: an unknown field named in an error message is cut to 100 characters."""

    def _backup(self, api: Api, token: str, workspace_id: str, kind: str = "cloud") -> str:
        created = api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "db", "kind": kind},
            headers=bearer(token),
        )
        assert created.status_code == 201, created.text
        backup_id: str = created.json()["id"]
        return backup_id

    def _assert_cut(self, response: Any, *fragments: str) -> None:
        message = refused(response, *fragments)
        assert SHOWN in message
        assert SHOWN + "f" not in message
        assert len(response.content) < 1_000

    def test_an_unknown_top_level_field_is_cut(self, api: Api) -> None:
        """A 900 KB unknown field in a body parsed by the converter: 400 naming its first
        100 characters, never the whole name."""
        token = api.person("ada@example.com")
        response = api.client.post(
            "/v1/workspaces", json={"name": "Acme", HUGE: 1}, headers=bearer(token)
        )
        self._assert_cut(response, "unknown field: ")
        assert workspaces_of(api, token) == []

    def test_unknown_fields_of_a_backup_patch_are_cut(self, api: Api) -> None:
        """The same at the top of a PATCH body and inside its nested objects, with the
        field's dotted path before the cut name."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        backup_id = self._backup(api, token, str(workspace_id))
        source = {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "bucket-b"}
        for body, prefix in (
            ({HUGE: 1}, "unknown field: "),
            ({"source": {**source, HUGE: 1}}, "unknown field: source."),
            ({"schedule": {"cron": "0 3 * * *", "timezone": "UTC", HUGE: 1}}, "schedule."),
            ({"credentials": {HUGE: 5}}, "credentials."),
        ):
            response = api.client.patch(
                f"/v1/backups/{backup_id}", json=body, headers=bearer(token)
            )
            self._assert_cut(response, prefix + SHOWN)

    def test_an_unknown_field_of_a_role_patch_is_cut(self, api: Api) -> None:
        """``PATCH .../roles/{slug}`` parses its own body: a 900 KB unknown field is cut
        there too, and many are listed ten at most (issue 12, finding 9)."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        path = f"/v1/workspaces/{workspace_id}/roles"
        body = {"slug": "ops", "name": "Ops", "permissions": []}
        assert api.client.post(path, json=body, headers=bearer(token)).status_code == 201
        response = api.client.patch(
            f"{path}/ops", json={"name": "Ops", HUGE: 1}, headers=bearer(token)
        )
        self._assert_cut(response, "unknown field: " + SHOWN)
        many = {f"x{n:05}": n for n in range(50)}
        response = api.client.patch(f"{path}/ops", json=many, headers=bearer(token))
        refused(response, "unknown field: x00000, x00001", "x00009 (and 40 more)")

    def test_a_duplicated_huge_key_is_cut(self, api: Api) -> None:
        """A duplicate key is named cut as well (two of 450 KB fit in the body cap)."""
        token = api.person("ada@example.com")
        key = HUGE[:450_000]
        content = f'{{"{key}": 1, "{key}": 2}}'.encode()
        response = api.client.post(
            "/v1/workspaces",
            content=content,
            headers={**bearer(token), "content-type": "application/json"},
        )
        self._assert_cut(response, "duplicate field")

    def test_many_unknown_fields_are_listed_ten_at_most(self, api: Api) -> None:
        """Thousands of unknown fields: the message names the first ten (in order) and
        counts the rest."""
        token = api.person("ada@example.com")
        body: dict[str, Any] = {"name": "Acme", **{f"x{n:05}": n for n in range(5_000)}}
        response = api.client.post("/v1/workspaces", json=body, headers=bearer(token))
        message = refused(response, "unknown field: x00000, x00001", "x00009 (and 4990 more)")
        assert "x00010" not in message


# A body just over the 1 MiB cap.
BIG = {"name": "x" * (1024 * 1024 + 10)}


class TestBodySize:
    """Contract 13: the body size is checked after the credential."""

    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("POST", "/v1/workspaces"),
            ("PATCH", "/v1/backups/00000000-0000-4000-8000-000000000000"),
            ("POST", "/v1/backups/00000000-0000-4000-8000-000000000000/pause"),
        ],
    )
    def test_an_unauthenticated_oversized_body_is_401(
        self, api: Api, method: str, path: str
    ) -> None:
        """No credential, or a bad one, and a body over 1 MiB: 401, not 400."""
        for headers in ({}, bearer("bks_not-a-real-token")):
            response = api.client.request(method, path, json=BIG, headers=headers)
            assert response.status_code == 401, response.text
            assert response.json()["error"]["code"] == "unauthenticated"

    def test_an_authenticated_oversized_body_is_400(self, api: Api) -> None:
        """With a valid credential the same body is 400, and nothing is created."""
        token = api.person("ada@example.com")
        response = api.client.post("/v1/workspaces", json=BIG, headers=bearer(token))
        refused(response, "body is larger than 1048576 bytes")
        assert workspaces_of(api, token) == []
