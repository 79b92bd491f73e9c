"""The OpenAPI document (``GET /openapi.json``) and the reference page (``GET /docs``) stay
true to the running application: same operations as its routes, valid OpenAPI 3.1, the
contract's security, statuses and error codes, and response schemas that match what the
live API returns."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html import escape
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route

from strongroom.adapters.http.openapi import document_for
from strongroom.adapters.http.routes.docs import CONTENT_SECURITY_POLICY, published, render_page
from strongroom.adapters.http.schemas import DURATION_PATTERN, NAME_PATTERN
from strongroom.adapters.webkit.errors import STATUS_BY_CODE
from strongroom.adapters.wire.present import present
from strongroom.domain.backups import (
    Backup,
    BackupKind,
    BackupState,
    CustomerS3Destination,
    RetentionPolicy,
    S3Source,
    Schedule,
)
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.names import clean_name
from support.world import Api, bearer, idp_access_token

Json = dict[str, Any]
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DOC_URI = "urn:strongroom:openapi"
UNAUTHENTICATED_V1 = {("GET", "/v1/auth/cli/config")}
# POSTs that create a resource (201); every other POST is an action (200).
CREATING = {
    ("POST", "/v1/workspaces"),
    ("POST", "/v1/workspaces/{wid}/backups"),
    ("POST", "/v1/api-keys"),
    ("POST", "/v1/workers"),
    ("POST", "/v1/workspaces/{wid}/roles"),
    ("POST", "/v1/workspaces/{wid}/invitations"),
    ("POST", "/v1/runs"),
    ("POST", "/v1/runs/{run_id}/upload-url"),
    ("POST", "/v1/runs/{run_id}/upload-urls"),
    ("POST", "/v1/auth/sessions"),
    ("POST", "/v1/auth/switch"),
    ("POST", "/idp/signup"),
    ("POST", "/v1/claims"),
    ("POST", "/v1/workspaces/{wid}/webhooks"),
}
# Operations that also answer 204 with no body (a claim when nothing is queued).
ALSO_EMPTY = {("POST", "/v1/claims")}
ACCEPTING = {
    ("POST", "/v1/backups/{bid}/trigger"),
    ("POST", "/v1/artifacts/{aid}/restores"),
    ("POST", "/v1/artifacts/{aid}/verify"),
    ("POST", "/v1/backups/{bid}/drills"),
}
# DELETEs that answer the object they changed (contract 15: releasing a legal hold).
ANSWERING_DELETES = {("DELETE", "/v1/artifacts/{aid}/hold"), ("DELETE", "/v1/runs/{run_id}/hold")}
# Operations whose success is a redirect (303 with Location), never a 2xx.
REDIRECTING = {("POST", "/idp/authorize")}
# --------------------------------------------------------------------------------------
# Helpers


def route_operations(routes: list[BaseRoute], prefix: str = "") -> set[tuple[str, str]]:
    """``(METHOD, path template)`` of every route (HEAD ignored, convertors stripped)."""
    found: set[tuple[str, str]] = set()
    for route in routes:
        if isinstance(route, Mount):
            found |= route_operations(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            path = re.sub(r"\{(\w+):[^}]*\}", r"{\1}", prefix + route.path)
            found |= {(method, path) for method in route.methods or () if method != "HEAD"}
        else:
            found.add((type(route).__name__, getattr(route, "path", "?")))
    return found


def documented_operations(document: Json) -> set[tuple[str, str]]:
    """``(METHOD, path template)`` of every operation in the document."""
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def each_operation(document: Json) -> Iterator[tuple[str, str, Json]]:
    """``(METHOD, path, operation)`` for every operation."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield method.upper(), path, operation


def operation_of(document: Json, method: str, path: str) -> Json:
    """One operation."""
    operation: Json = document["paths"][path][method.lower()]
    return operation


def resolve(document: Json, item: Json) -> Json:
    """The object a local ``$ref`` names (or ``item`` itself)."""
    while "$ref" in item:
        node: Any = document
        for part in item["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        item = node
    return item


def all_refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` anywhere in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from all_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from all_refs(value)


def object_schemas(document: Json, schema: Json, seen: set[str] | None = None) -> Iterator[Json]:
    """Every object schema reachable from ``schema`` (through refs, combinators, items)."""
    seen = set() if seen is None else seen
    if "$ref" in schema:
        if schema["$ref"] in seen:
            return
        seen.add(schema["$ref"])
        yield from object_schemas(document, resolve(document, schema), seen)
        return
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    if "object" in types or "properties" in schema:
        yield schema
    for child in schema.get("properties", {}).values():
        yield from object_schemas(document, child, seen)
    for combinator in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(combinator, []):
            yield from object_schemas(document, child, seen)
    if isinstance(schema.get("items"), dict):
        yield from object_schemas(document, schema["items"], seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from object_schemas(document, schema["additionalProperties"], seen)


def response_schema(document: Json, method: str, path: str, status: int) -> Json:
    """The documented JSON schema of one response, resolved."""
    response = operation_of(document, method, path)["responses"][str(status)]
    schema: Json = response["content"]["application/json"]["schema"]
    return schema


def check_against_schema(document: Json, schema: Json, value: Any) -> None:
    """``value`` validates against ``schema`` (JSON Schema 2020-12, formats checked), and
    every object in it holds its schema's required keys and no key the schema lacks."""
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(DOC_URI, resource)
    target = {"$ref": DOC_URI + schema["$ref"]} if "$ref" in schema else schema
    validator = Draft202012Validator(
        target, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    errors = [
        f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)
    ]
    assert not errors, errors
    check_keys(document, schema, value, "$")


def check_keys(document: Json, schema: Json, value: Any, where: str) -> None:
    """Recursively: an object's keys hold the required ones and only documented ones."""
    schema = resolve(document, schema)
    if isinstance(value, dict) and "properties" in schema:
        keys, properties = set(value), set(schema["properties"])
        assert set(schema["required"]) <= keys, (where, keys, schema["required"])
        assert keys <= properties, (where, keys - properties)
        for key, item in value.items():
            check_keys(document, schema["properties"][key], item, f"{where}.{key}")
        return
    variants = [*schema.get("oneOf", []), *schema.get("anyOf", [])]
    if variants and value is not None:
        matching = [
            variant
            for variant in variants
            if resolve(document, variant).get("type") != "null" and _fits(document, variant, value)
        ]
        assert matching, (where, value)
        check_keys(document, matching[0], value, where)
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            check_keys(document, schema["items"], item, f"{where}[{index}]")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            check_keys(document, schema["additionalProperties"], item, f"{where}.{key}")


def _fits(document: Json, schema: Json, value: Any) -> bool:
    resolved = resolve(document, schema)
    const = resolved.get("properties", {}).get("type", {}).get("const")
    return not isinstance(value, dict) or const is None or value.get("type") == const


def assert_exact(document: Json, schema: Json, value: Json) -> None:
    """The response's keys equal the schema's properties and its required list."""
    resolved = resolve(document, schema)
    assert set(value) == set(resolved["properties"]) == set(resolved["required"])


@pytest.fixture
def document(api: Api) -> Json:
    """The document as the running application serves it."""
    response = api.client.get("/openapi.json")
    assert response.status_code == 200, response.text
    served: Json = response.json()
    return served


@pytest.fixture
def admin(api: Api) -> tuple[dict[str, str], str]:
    """Bearer headers of an admin scoped to a new workspace, and the workspace id."""
    token, workspace_id = api.workspace_admin("ada@example.com")
    return bearer(token), str(workspace_id)


# --------------------------------------------------------------------------------------
# The document describes exactly the application's routes.


class TestRoutesAndOperations:
    """The set of (method, path) of the app's routes equals the document's operations."""

    def test_routes_equal_documented_operations(self, api: Api, document: Json) -> None:
        """No route is missing from the document and no documented operation lacks a route."""
        app = api.client.app
        assert isinstance(app, Starlette)
        routes = route_operations(list(app.routes))
        documented = documented_operations(document)
        assert routes - documented == set(), "routes missing from the document"
        assert documented - routes == set(), "documented operations without a route"

    def test_every_route_is_documented(self, api: Api, document: Json) -> None:
        """Every (method, path) the router serves is an operation of the document."""
        app = api.client.app
        assert isinstance(app, Starlette)
        missing = route_operations(list(app.routes)) - documented_operations(document)
        assert missing == set()

    def test_the_comparison_sees_a_missing_and_an_extra_route(self) -> None:
        """The route walk finds methods per path (HEAD ignored) and strips convertors."""

        async def endpoint(_request: Any) -> Any:  # pragma: no cover - never called
            return None

        routes: list[BaseRoute] = [
            Route("/a/{id:uuid}", endpoint, methods=["GET"]),
            Mount("/m", routes=[Route("/b", endpoint, methods=["POST", "DELETE"])]),
        ]
        assert route_operations(routes) == {
            ("GET", "/a/{id}"),
            ("POST", "/m/b"),
            ("DELETE", "/m/b"),
        }

    def test_operation_ids_are_unique(self, document: Json) -> None:
        """Every operation has its own operationId, summary and tag."""
        ids = [operation["operationId"] for _, _, operation in each_operation(document)]
        assert len(ids) == len(set(ids))
        tags = {tag["name"] for tag in document["tags"]}
        for _, _, operation in each_operation(document):
            assert operation["summary"]
            assert set(operation["tags"]) <= tags


# --------------------------------------------------------------------------------------
# Validity


class TestValidity:
    """The document is valid OpenAPI 3.1 and built once per application."""

    def test_declares_openapi_3_1(self, document: Json) -> None:
        """``openapi`` is ``3.1.0`` and the info object names the API."""
        assert document["openapi"] == "3.1.0"
        assert document["info"]["title"] == "Strongroom API"
        assert document["info"]["version"]

    def test_passes_the_openapi_spec_validator(self, document: Json) -> None:
        """``openapi-spec-validator`` accepts the served document."""
        validate_openapi(document)

    def test_every_reference_resolves(self, document: Json) -> None:
        """Every ``$ref`` names a component that exists."""
        for target in all_refs(document):
            assert target.startswith("#/components/"), target
            assert resolve(document, {"$ref": target}), target

    def test_is_built_once_per_application(self, api: Api) -> None:
        """The document and its renderings are cached in the app, not rebuilt per request."""
        app = api.client.app
        assert isinstance(app, Starlette)
        assert document_for(app) is document_for(app)
        assert published(app) is published(app)
        first = api.client.get("/openapi.json").content
        assert api.client.get("/openapi.json").content == first

    def test_public_url_becomes_the_server(self) -> None:
        """With ``public_url`` configured, the document names it as its server."""
        app = Starlette()
        app.state.public_url = "https://backups.example.com/"
        assert document_for(app)["servers"] == [{"url": "https://backups.example.com"}]

    def test_duration_pattern_follows_the_contract(self) -> None:
        """Weeks, days, hours, minutes and seconds are accepted; months and years are not."""
        for good in ("P30D", "P4W", "PT36H", "PT0S", "P1DT12H", "P1W2D"):
            assert re.fullmatch(DURATION_PATTERN.strip("^$"), good), good
        for bad in ("P1M", "P1Y", "P", "PT", "P1DT", "30D", "P1.5D"):
            assert not re.fullmatch(DURATION_PATTERN.strip("^$"), bad), bad


# --------------------------------------------------------------------------------------
# Security


class TestSecurity:
    """Bearer security where the contract requires a credential, none elsewhere."""

    def test_v1_operations_declare_bearer_security(self, document: Json) -> None:
        """Every ``/v1`` operation except the CLI configuration needs an HTTP bearer token."""
        schemes = document["components"]["securitySchemes"]
        for method, path, operation in each_operation(document):
            if not path.startswith("/v1/") or (method, path) in UNAUTHENTICATED_V1:
                continue
            security = operation.get("security", document.get("security"))
            assert security, (method, path)
            for requirement in security:
                for name in requirement:
                    assert schemes[name]["type"] == "http", (method, path)
                    assert schemes[name]["scheme"] == "bearer", (method, path)

    def test_public_operations_declare_no_security(self, document: Json) -> None:
        """Health, the CLI configuration, the identity provider and the docs need no token."""
        for method, path, operation in each_operation(document):
            if path.startswith("/v1/") and (method, path) not in UNAUTHENTICATED_V1:
                continue
            assert operation["security"] == [], (method, path)
            if path in OAUTH_ENDPOINTS:  # 401 only as OAuth's invalid_client after HTTP Basic
                schema = operation["responses"]["401"]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/OAuthError"}
                continue
            assert "401" not in operation["responses"], (method, path)

    def test_sign_in_takes_the_identity_providers_token(self, document: Json) -> None:
        """``POST /v1/auth/sessions`` is authenticated by the identity provider's token."""
        security = operation_of(document, "POST", "/v1/auth/sessions")["security"]
        assert security == [{"idpAccessToken": []}]


# --------------------------------------------------------------------------------------
# Statuses and errors

OAUTH_ENDPOINTS = ("/idp/token", "/idp/device/code")


def error_codes(operation: Json) -> dict[str, set[str]]:
    """Status -> the error codes an operation lists for it (the examples' keys)."""
    return {
        status: {
            code
            for content in response.get("content", {}).values()
            for code in content.get("examples", {})
        }
        for status, response in operation["responses"].items()
        if not status.startswith("2")
    }


class TestResponses:
    """Success statuses and every applicable error, in the error envelope."""

    def test_success_status_follows_the_contract(self, document: Json) -> None:
        """201 for creating POSTs, 204 without a body for DELETE, 200 otherwise."""
        for method, path, operation in each_operation(document):
            successes = [status for status in operation["responses"] if status.startswith("2")]
            if (method, path) in REDIRECTING:
                assert successes == [], (method, path)
                assert "Location" in operation["responses"]["303"]["headers"]
                continue
            if (method, path) in ALSO_EMPTY:
                assert "content" not in operation["responses"].pop("204")
                successes.remove("204")
            expected = (
                "201"
                if (method, path) in CREATING
                else "202"
                if (method, path) in ACCEPTING
                else "204"
                if method == "DELETE" and (method, path) not in ANSWERING_DELETES
                else "200"
            )
            assert successes == [expected], (method, path, successes)
            response = operation["responses"][expected]
            assert ("content" in response) == (expected != "204"), (method, path)
            assert "X-Request-ID" in response["headers"], (method, path)

    def test_errors_use_the_envelope(self, document: Json) -> None:
        """Every error response is the ``Error`` envelope whose examples' codes map to it.

        The only exception is the OAuth error format of ``POST /idp/token`` and
        ``POST /idp/device/code`` (400, and 401 ``invalid_client``).
        """
        for method, path, operation in each_operation(document):
            for status, response in operation["responses"].items():
                if status[0] not in "45" or status == "503":
                    continue
                content = response["content"]["application/json"]
                assert "X-Request-ID" in response["headers"], (method, path, status)
                if path in OAUTH_ENDPOINTS and status in ("400", "401"):
                    assert content["schema"] == {"$ref": "#/components/schemas/OAuthError"}
                    continue
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}, (path, status)
                assert content["examples"], (method, path, status)
                for code, example in content["examples"].items():
                    assert STATUS_BY_CODE[code] == int(status), (method, path, code)
                    assert example["value"]["error"]["code"] == code
                    assert f"`{code}`" in response["description"], (method, path, code)
                    check_against_schema(document, content["schema"], example["value"])

    def test_every_applicable_error_status_is_listed(self, document: Json) -> None:
        """Each operation lists the errors its shape implies.

        500 always; 401 with a credential; 400 and 404 with a path id; 400 with a body,
        pagination or an Idempotency-Key; 403 with a permission or a workspace scope,
        ``wrong_workspace`` with ``{wid}``; 409 ``idempotency_conflict`` with an
        Idempotency-Key; 502 where the database is reached.
        """
        for method, path, operation in each_operation(document):
            codes = error_codes(operation)
            listed = set(codes)
            parameters = {resolve(document, p)["name"] for p in operation.get("parameters", [])}
            expected = {"500"}
            if operation["security"]:
                expected |= {"401", "502"}
            if "{" in path:
                expected |= {"400", "404"}
            if "requestBody" in operation or {"limit", "Idempotency-Key"} & parameters:
                expected.add("400")
            if operation["x-permissions"]:
                expected.add("403")
                for slug in operation["x-permissions"]:
                    assert slug in operation["description"], (method, path, slug)
            if "{wid}" in path:
                assert "wrong_workspace" in codes.get("403", set()), (method, path)
            if "Idempotency-Key" in parameters:
                assert "idempotency_conflict" in codes.get("409", set()), (method, path)
            assert expected <= listed, (method, path, expected - listed)

    @pytest.mark.parametrize(
        ("method", "path", "expected"),
        [
            ("POST", "/v1/workspaces", {"forbidden", "quota_exceeded", "upstream_unavailable"}),
            ("GET", "/v1/workspaces", {"forbidden", "invalid_request"}),
            ("PATCH", "/v1/workspaces/{wid}", {"billing_restricted", "invalid_request"}),
            ("DELETE", "/v1/workspaces/{wid}", {"artifact_locked", "wrong_workspace"}),
            ("POST", "/v1/auth/switch", {"forbidden", "not_found"}),
            ("DELETE", "/v1/auth/sessions/current", {"forbidden"}),
            (
                "POST",
                "/v1/workspaces/{wid}/backups",
                {"quota_exceeded", "name_taken", "billing_restricted", "idempotency_conflict"},
            ),
            (
                "PATCH",
                "/v1/backups/{bid}",
                {
                    "invalid_request",
                    "validation_failed",
                    "retention_immutable",
                    "lock_exceeds_expiry",
                    "name_taken",
                    "billing_restricted",
                    "not_found",
                },
            ),
            ("DELETE", "/v1/backups/{bid}", {"artifact_locked", "billing_restricted"}),
            ("POST", "/v1/backups/{bid}/pause", {"billing_restricted", "not_found"}),
            ("POST", "/v1/backups/{bid}/resume", {"billing_restricted", "not_found"}),
            ("POST", "/idp/signup", {"invalid_request", "name_taken", "not_found"}),
            ("POST", "/idp/device", {"invalid_request"}),
            ("POST", "/idp/token", {"authorization_pending", "slow_down", "expired_token"}),
        ],
    )
    def test_contract_error_codes_are_listed(
        self, document: Json, method: str, path: str, expected: set[str]
    ) -> None:
        """The codes the contract names for an operation are all listed on it."""
        listed = set().union(*error_codes(operation_of(document, method, path)).values())
        assert expected <= listed

    def test_every_error_code_is_in_the_code_table(self, document: Json) -> None:
        """``x-error-codes`` lists every code the API can answer, with its status."""
        table = {entry["code"]: entry["status"] for entry in document["x-error-codes"]}
        assert table == STATUS_BY_CODE


OAUTH_FORMS = ("/idp/device/code", "/idp/token")


class TestRequestBodies:
    """Request bodies are closed: unknown fields are refused, so the schemas say so."""

    def test_every_request_body_schema_forbids_additional_properties(self, document: Json) -> None:
        """Every object schema reachable from a request body has ``additionalProperties: false``,
        except OAuth's two forms, which ignore unknown parameters (RFC 6749 section 3.2),
        each sent once: ``additionalProperties: {type: string}``."""
        bodies = 0
        for method, path, operation in each_operation(document):
            for content in operation.get("requestBody", {}).get("content", {}).values():
                bodies += 1
                closed = path not in OAUTH_FORMS
                for schema in object_schemas(document, content["schema"]):
                    expected = False if closed else {"type": "string"}
                    assert schema.get("additionalProperties") == expected, (method, path, schema)
        assert bodies >= 10

    def test_bodies_are_required_except_on_actions(self, document: Json) -> None:
        """Action bodies (sign-in, pause, resume) are optional; the others are required."""
        optional = {
            (method, path)
            for method, path, operation in each_operation(document)
            if "requestBody" in operation and not operation["requestBody"]["required"]
        }
        assert optional == {
            ("POST", "/v1/auth/sessions"),
            ("POST", "/v1/backups/{bid}/pause"),
            ("POST", "/v1/backups/{bid}/resume"),
            ("POST", "/v1/workers/{id}/rotate"),
            ("POST", "/v1/invitations/{id}/accept"),
            ("POST", "/v1/backups/{bid}/trigger"),
            ("POST", "/v1/runs/{run_id}/confirm"),
            ("POST", "/v1/runs/{run_id}/cancel"),
            ("POST", "/v1/artifacts/{aid}/download-url"),
            ("POST", "/v1/artifacts/{aid}/verify"),
            ("POST", "/v1/claims"),
            ("POST", "/v1/runs/{run_id}/heartbeat"),
            ("POST", "/v1/artifacts/{aid}/hold"),
            ("POST", "/v1/runs/{run_id}/hold"),
            ("POST", "/v1/webhooks/{id}/ping"),
            ("POST", "/v1/webhooks/{id}/deliveries/{did}/redeliver"),
        }

    def test_lists_take_pagination_parameters(self, document: Json) -> None:
        """Paginated lists take ``limit`` and ``cursor`` and answer ``{data, next_cursor}``."""
        for method, path in (
            ("GET", "/v1/workspaces"),
            ("GET", "/v1/workspaces/{wid}/backups"),
            ("GET", "/v1/workspaces/{wid}/audit"),
            ("GET", "/v1/api-keys"),
            ("GET", "/v1/workers"),
            ("GET", "/v1/workspaces/{wid}/members"),
        ):
            operation = operation_of(document, method, path)
            names = {resolve(document, p)["name"] for p in operation["parameters"]}
            assert {"limit", "cursor", "X-Request-ID"} <= names
            schema = resolve(document, response_schema(document, method, path, 200))
            assert set(schema["properties"]) == {"data", "next_cursor"}


class TestParameters:
    """Parameter schemas accept whatever the server accepts."""

    @pytest.mark.parametrize("sent", ["with spaces", "x" * 201, "tab\there", "ünïcode"])
    def test_any_request_id_is_accepted_so_its_schema_has_no_pattern(
        self, api: Api, document: Json, sent: str
    ) -> None:
        """A client ``X-Request-ID`` the server will not echo is still accepted (and
        replaced), so the parameter's schema must not refuse it; the description states
        the echo rule instead."""
        response = api.client.get("/healthz", headers={"X-Request-ID": sent.encode()})
        assert response.status_code == 200
        assert response.headers["x-request-id"].startswith("req_")
        parameter = document["components"]["parameters"]["X-Request-ID"]
        assert "pattern" not in parameter["schema"]
        check_against_schema(document, parameter["schema"], sent)
        assert "`!` to `~`" in parameter["description"]
        assert "req_<uuid>" in parameter["description"]


# --------------------------------------------------------------------------------------
# The schemas match what the live API returns.


class TestLiveResponses:
    """Real requests answer exactly the documented shapes."""

    def test_workspace_read_matches_its_schema(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """``GET /v1/workspaces/{wid}``: keys equal the Workspace schema's properties."""
        headers, workspace_id = admin
        response = api.client.get(f"/v1/workspaces/{workspace_id}", headers=headers)
        assert response.status_code == 200
        schema = response_schema(document, "GET", "/v1/workspaces/{wid}", 200)
        assert_exact(document, schema, response.json())
        check_against_schema(document, schema, response.json())

    def test_quota_list_matches_its_schema(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """``GET .../quotas``: the envelope and every quota have exactly the documented keys."""
        headers, workspace_id = admin
        response = api.client.get(f"/v1/workspaces/{workspace_id}/quotas", headers=headers)
        assert response.status_code == 200
        schema = response_schema(document, "GET", "/v1/workspaces/{wid}/quotas", 200)
        body = response.json()
        assert_exact(document, schema, body)
        assert body["data"]
        for quota in body["data"]:
            assert_exact(document, {"$ref": "#/components/schemas/Quota"}, quota)
        check_against_schema(document, schema, body)

    def test_audit_list_matches_its_schema(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """``GET .../audit``: the envelope, every event and its actor and target match."""
        headers, workspace_id = admin
        renamed = api.client.patch(
            f"/v1/workspaces/{workspace_id}", json={"name": "Renamed"}, headers=headers
        )
        assert renamed.status_code == 200
        response = api.client.get(f"/v1/workspaces/{workspace_id}/audit", headers=headers)
        assert response.status_code == 200
        schema = response_schema(document, "GET", "/v1/workspaces/{wid}/audit", 200)
        body = response.json()
        assert_exact(document, schema, body)
        event_schema = resolve(document, {"$ref": "#/components/schemas/AuditEvent"})
        assert body["data"]
        for event in body["data"]:
            assert_exact(document, event_schema, event)
            for nested in ("actor", "target"):
                assert_exact(document, event_schema["properties"][nested], event[nested])
        assert any(event["changes"] for event in body["data"])
        check_against_schema(document, schema, body)

    def test_runs_and_artifacts_match_their_schemas(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """Run, upload plan, confirmed run, artifact list and download answer their schemas."""
        headers, workspace_id = admin
        backup = api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "data", "kind": "manual"},
            headers=headers,
        ).json()["id"]
        api.client.patch(
            f"/v1/backups/{backup}",
            json={"retention": {"expire_after": "P1D", "lock_for": "PT0S"}},
            headers=headers,
        )
        run = api.client.post("/v1/runs", json={"backup_id": backup}, headers=headers)
        schema = response_schema(document, "POST", "/v1/runs", 201)
        assert_exact(document, schema, run.json())
        check_against_schema(document, schema, run.json())
        run_id = run.json()["id"]
        digest = hashlib.sha256(b"bytes").hexdigest()
        plan = api.client.post(
            f"/v1/runs/{run_id}/upload-url",
            json={"name": "a", "size": 5, "sha256": digest},
            headers=headers,
        ).json()
        check_against_schema(
            document, response_schema(document, "POST", "/v1/runs/{run_id}/upload-url", 201), plan
        )
        assert_exact(document, {"$ref": "#/components/schemas/SingleUpload"}, plan)
        assert api.client.put(plan["url"], content=b"bytes").status_code == 200
        confirmed = api.client.post(f"/v1/runs/{run_id}/confirm", headers=headers).json()
        check_against_schema(
            document, response_schema(document, "POST", "/v1/runs/{run_id}/confirm", 200), confirmed
        )
        listed = api.client.get(f"/v1/workspaces/{workspace_id}/artifacts", headers=headers)
        schema = response_schema(document, "GET", "/v1/workspaces/{wid}/artifacts", 200)
        check_against_schema(document, schema, listed.json())
        assert_exact(document, {"$ref": "#/components/schemas/Artifact"}, listed.json()["data"][0])
        download = api.client.post(
            f"/v1/artifacts/{plan['artifact_id']}/download-url", headers=headers
        ).json()
        check_against_schema(
            document,
            response_schema(document, "POST", "/v1/artifacts/{aid}/download-url", 200),
            download,
        )

    def test_backup_matches_its_schema(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """Create, read, change, pause and list a backup: every answer is the Backup schema."""
        headers, workspace_id = admin
        created = api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "nightly", "kind": "manual"},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        schema = response_schema(document, "POST", "/v1/workspaces/{wid}/backups", 201)
        assert_exact(document, schema, created.json())
        check_against_schema(document, schema, created.json())
        backup_id = created.json()["id"]
        read = api.client.get(f"/v1/backups/{backup_id}", headers=headers)
        assert_exact(
            document, response_schema(document, "GET", "/v1/backups/{bid}", 200), read.json()
        )
        changed = api.client.patch(
            f"/v1/backups/{backup_id}",
            json={"retention": {"expire_after": "P30D", "lock_for": "P7D"}},
            headers=headers,
        )
        assert changed.status_code == 200, changed.text
        check_against_schema(
            document, response_schema(document, "PATCH", "/v1/backups/{bid}", 200), changed.json()
        )
        paused = api.client.post(f"/v1/backups/{backup_id}/pause", headers=headers)
        check_against_schema(
            document,
            response_schema(document, "POST", "/v1/backups/{bid}/pause", 200),
            paused.json(),
        )
        listed = api.client.get(f"/v1/workspaces/{workspace_id}/backups", headers=headers)
        check_against_schema(
            document,
            response_schema(document, "GET", "/v1/workspaces/{wid}/backups", 200),
            listed.json(),
        )

    def test_backup_presenter_matches_its_schema(self, document: Json) -> None:
        """What the API renders of a draft and of a fully configured backup is the schema."""
        now = datetime.now(UTC)
        draft = Backup.draft(uuid4(), uuid4(), "nightly", BackupKind.MANUAL, now)
        configured = Backup(
            id=uuid4(),
            workspace_id=uuid4(),
            name="db",
            kind=BackupKind.CLOUD,
            state=BackupState.ACTIVE,
            paused=True,
            created_at=now,
            updated_at=now,
            source=S3Source(endpoint="https://s3.example.com", bucket="data", prefix="db/"),
            sealed_credentials=b"sealed",
            schedule=Schedule(cron="0 3 * * *", timezone="Europe/Paris"),
            retention=RetentionPolicy(Duration.parse("P30D"), Duration.parse("P7D")),
            destination=CustomerS3Destination(endpoint="https://s3.example.com", bucket="mine"),
            next_run_at=now,
        )
        schema = {"$ref": "#/components/schemas/Backup"}
        for backup in (draft, configured):
            rendered = present(backup)
            assert_exact(document, schema, rendered)
            check_against_schema(document, schema, rendered)

    def test_other_answers_match_their_schemas(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """Health, readiness, the catalog, who-am-I, the CLI configuration and the
        membership list answer their documented schemas."""
        headers, _ = admin
        for path, needs_token in (
            ("/healthz", False),
            ("/readyz", False),
            ("/v1/auth/cli/config", False),
            ("/v1/permissions", True),
            ("/v1/me", True),
            ("/v1/workspaces", True),
        ):
            response = api.client.get(path, headers=headers if needs_token else {})
            assert response.status_code == 200, (path, response.text)
            schema = response_schema(document, "GET", path, 200)
            if path != "/v1/me":  # ``user`` is optional there (people only)
                assert_exact(document, schema, response.json())
            check_against_schema(document, schema, response.json())

    def test_access_resources_match_their_schemas(
        self, api: Api, document: Json, admin: tuple[dict[str, str], str]
    ) -> None:
        """API keys, workers, members, roles and invitations answer their schemas."""
        headers, workspace_id = admin
        base = f"/v1/workspaces/{workspace_id}"
        client = api.client

        def check(method: str, path: str, status: int, response: Any) -> None:
            assert response.status_code == status, (method, path, response.text)
            schema = response_schema(document, method, path, status)
            check_against_schema(document, schema, response.json())

        key = client.post(
            "/v1/api-keys",
            json={
                "name": "ci",
                "permissions": ["backups:read"],
                "expires_at": "2999-01-01T00:00:00Z",
            },
            headers=headers,
        )
        check("POST", "/v1/api-keys", 201, key)
        key_id = key.json()["id"]
        client.get("/v1/me", headers=bearer(key.json()["token"]))
        check("GET", "/v1/api-keys", 200, client.get("/v1/api-keys", headers=headers))
        check(
            "GET", "/v1/api-keys/{id}", 200, client.get(f"/v1/api-keys/{key_id}", headers=headers)
        )
        worker = client.post("/v1/workers", json={"name": "rack"}, headers=headers)
        check("POST", "/v1/workers", 201, worker)
        worker_id = worker.json()["id"]
        check("GET", "/v1/workers", 200, client.get("/v1/workers", headers=headers))
        check(
            "GET", "/v1/workers/{id}", 200, client.get(f"/v1/workers/{worker_id}", headers=headers)
        )
        rotated = client.post(f"/v1/workers/{worker_id}/rotate", headers=headers)
        check("POST", "/v1/workers/{id}/rotate", 200, rotated)
        role = client.post(
            f"{base}/roles",
            json={"slug": "ops", "name": "Ops", "permissions": ["backups:read"]},
            headers=headers,
        )
        check("POST", "/v1/workspaces/{wid}/roles", 201, role)
        check(
            "GET", "/v1/workspaces/{wid}/roles", 200, client.get(f"{base}/roles", headers=headers)
        )
        check(
            "GET",
            "/v1/workspaces/{wid}/roles/{slug}",
            200,
            client.get(f"{base}/roles/ops", headers=headers),
        )
        check(
            "PATCH",
            "/v1/workspaces/{wid}/roles/{slug}",
            200,
            client.patch(f"{base}/roles/ops", json={"name": "Operations"}, headers=headers),
        )
        invitation = client.post(
            f"{base}/invitations", json={"email": "bob@example.com", "role": "ops"}, headers=headers
        )
        check("POST", "/v1/workspaces/{wid}/invitations", 201, invitation)
        check(
            "GET",
            "/v1/workspaces/{wid}/invitations",
            200,
            client.get(f"{base}/invitations", headers=headers),
        )
        bob = api.person("bob@example.com")
        accepted = client.post(
            f"/v1/invitations/{invitation.json()['id']}/accept", headers=bearer(bob)
        )
        check("POST", "/v1/invitations/{id}/accept", 200, accepted)
        members = client.get(f"{base}/members", headers=headers)
        check("GET", "/v1/workspaces/{wid}/members", 200, members)
        bob_id = accepted.json()["user_id"]
        check(
            "PATCH",
            "/v1/workspaces/{wid}/members/{id}",
            200,
            client.patch(f"{base}/members/{bob_id}", json={"role": "viewer"}, headers=headers),
        )

    def test_sessions_match_their_schema(self, api: Api, document: Json) -> None:
        """Sign-in and switch answer the Session schema; a refusal answers the envelope."""
        access = idp_access_token(api.facade, "grace@example.com")
        signed_in = api.client.post("/v1/auth/sessions", headers=bearer(access))
        assert signed_in.status_code == 201, signed_in.text
        schema = response_schema(document, "POST", "/v1/auth/sessions", 201)
        assert_exact(document, schema, signed_in.json())
        check_against_schema(document, schema, signed_in.json())
        refused = api.client.get("/v1/me")
        assert refused.status_code == 401
        check_against_schema(
            document, response_schema(document, "GET", "/v1/me", 401), refused.json()
        )


# --------------------------------------------------------------------------------------
# The reference page


class TestDocsPage:
    """``GET /docs`` is a self-contained, escaped HTML page of the whole document."""

    def test_lists_every_operation_without_authentication(self, api: Api, document: Json) -> None:
        """The page answers without a token and shows every path, method and summary."""
        response = api.client.get("/docs")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        page = response.text
        for method, path, operation in each_operation(document):
            assert escape(path) in page, path
            assert f'id="op-{operation["operationId"]}"' in page
            assert escape(operation["summary"]) in page
            assert f">{method}</span>" in page
            for slug in operation["x-permissions"]:
                assert escape(slug) in page

    def test_has_a_strict_content_security_policy(self, api: Api) -> None:
        """The CSP allows nothing but the page's own inline stylesheet, by its hash."""
        response = api.client.get("/docs")
        policy = response.headers["content-security-policy"]
        assert policy == CONTENT_SECURITY_POLICY
        assert "default-src 'none'" in policy
        style = re.search(r"<style>(.*?)</style>", response.text, re.S)
        assert style is not None
        digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"

    def test_is_self_contained(self, api: Api) -> None:
        """No script and no external resource: every link is an anchor or a local path."""
        page = api.client.get("/docs").text
        assert "<script" not in page.lower()
        assert re.findall(r'(?:src|href)="(?![#/])', page) == []
        assert "<link" not in page.lower()

    def test_openapi_json_needs_no_authentication(self, api: Api) -> None:
        """``GET /openapi.json`` answers JSON without a token, with a request id."""
        response = api.client.get("/openapi.json")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        assert response.headers["x-request-id"]
        app = api.client.app
        assert isinstance(app, Starlette)
        assert response.json() == document_for(app)

    def test_escapes_every_value_of_the_document(self, document: Json) -> None:
        """Text from the document never reaches the page as markup."""
        hostile = "<script>alert(1)</script>"
        operation = operation_of(document, "GET", "/healthz")
        operation["summary"] = hostile
        operation["description"] = f"`{hostile}` and {hostile}"
        document["info"]["title"] = hostile
        document["components"]["schemas"]["Health"]["properties"]['"><img src=x>'] = {
            "type": "string",
            "description": hostile,
        }
        page = render_page(document)
        assert "<script" not in page
        assert "<img" not in page
        assert escape(hostile) in page


class TestNamePattern:
    """The document's `Name` pattern says exactly what the server accepts as a name."""

    @given(
        st.text(
            st.characters(codec="utf-8", exclude_categories=["Cs"])
            | st.sampled_from(" \t\n\x85\xa0\x07\x1f\x7f\x9f"),
            max_size=110,
        )
    )
    def test_the_pattern_matches_the_names_the_server_accepts(self, raw: str) -> None:
        try:
            clean_name(raw)
        except InvalidRequestError:
            accepted = False
        else:
            accepted = True
        assert bool(re.search(NAME_PATTERN, raw)) == accepted
