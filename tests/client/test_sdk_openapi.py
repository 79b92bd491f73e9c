"""The SDK covers the API exactly: every operation of ``/openapi.json`` has a method with
the same method, path, parameters, body kind, credential and idempotency, and the SDK has
no method the API lacks. Exclusions are listed here, with their reason."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from strongroom.client import AsyncClient, Client
from strongroom.client.endpoints import Endpoint, Spec
from strongroom.client.operations import Operations
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings

# Operations that are not API for a program: the SDK leaves them out on purpose.
EXCLUDED = {
    "putObject": "presigned storage URL: use Client.upload(url, content, headers)",
    "getObject": "presigned storage URL: use Client.download(url)",
    "idpDevicePage": "HTML page where a person approves a device code",
    "idpDeviceDecision": "the HTML form of that page, for people",
    "getDocsPage": "HTML reference page",
    "idpAuthorizePage": "HTML sign-in page of the authorization code grant, for browsers",
    "idpAuthorize": "the HTML form of that page, answered by a redirect",
    "getDashboard": "the dashboard's HTML page",
    "getDashboardAsset": "the dashboard's scripts and styles",
    "getProofKey": "PEM text for verifiers: strongroom proof verify --server URL fetches it",
    "previewRetention": "a POST read page by page: strongroom retention preview calls it",
}
# Header parameters the SDK takes as keyword arguments; X-Request-ID it sets itself.
HEADER_ARGUMENTS = {"If-Match": "if_match", "Idempotency-Key": "idempotency_key"}
METHODS = ("get", "put", "post", "patch", "delete")
# Required fields whose one sensible value the SDK fills in by default.
DEFAULTED = {("idpToken", "grant_type")}


def snake(operation_id: str) -> str:
    """``listBackups`` -> ``list_backups``."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", operation_id).lower()


def sdk_specs() -> dict[str, Spec]:
    """Every operation the SDK declares, by operation id."""
    return {
        value.spec.operation_id: value.spec
        for value in vars(Operations).values()
        if isinstance(value, Endpoint)
    }


@pytest.fixture(scope="module")
def operations(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Every operation of the server's document: (method, path, operation, document)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("openapi"))
    with TestClient(create_app(settings)) as client:
        document = client.get("/openapi.json").json()
    return {
        operation["operationId"]: (method, path, operation, document)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def parameters(operation: dict[str, Any], document: dict[str, Any]) -> list[dict[str, Any]]:
    """An operation's parameters, references resolved."""
    resolved = []
    for declared in operation.get("parameters", []):
        name = declared.get("$ref", "").split("/")[-1]
        resolved.append(document["components"]["parameters"][name] if name else declared)
    return resolved


def body_schema(operation: dict[str, Any], document: dict[str, Any]) -> tuple[str | None, Any]:
    """The body's kind ("json", "form" or None) and its object schema."""
    content = operation.get("requestBody", {}).get("content", {})
    for media, kind in (
        ("application/json", "json"),
        ("application/x-www-form-urlencoded", "form"),
    ):
        if media in content:
            schema = content[media]["schema"]
            if "$ref" in schema:
                schema = document["components"]["schemas"][schema["$ref"].split("/")[-1]]
            return kind, schema
    return None, None


def normalized(path: str) -> str:
    """A path with its placeholders' names blanked."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_api_operation_has_an_sdk_method_and_no_more(operations: dict[str, Any]) -> None:
    """The SDK's operation ids are the document's, less the listed exclusions."""
    assert set(EXCLUDED) <= set(operations), "an exclusion names no operation"
    assert sorted(sdk_specs()) == sorted(set(operations) - set(EXCLUDED))


@pytest.mark.parametrize("operation_id", sorted(sdk_specs()))
def test_sdk_method_matches_the_operation(operation_id: str, operations: dict[str, Any]) -> None:
    """Method, path, parameter names and required-ness, body kind, credential, key."""
    method, path, operation, document = operations[operation_id]
    spec = sdk_specs()[operation_id]
    assert spec.method == method.upper()
    assert normalized(spec.path) == normalized(path)

    expected: dict[str, bool] = {}  # SDK argument -> required
    placeholders = iter(spec.placeholders)
    for parameter in parameters(operation, document):
        where, name = parameter["in"], parameter["name"]
        if where == "path":
            expected[next(placeholders)] = True
        elif where == "query":
            expected[name] = bool(parameter.get("required"))
        elif where == "header" and name in HEADER_ARGUMENTS:
            expected[HEADER_ARGUMENTS[name]] = False
    kind, schema = body_schema(operation, document)
    if kind is not None:
        required = set(schema.get("required", []))
        for name in schema.get("properties", {}):
            expected[name] = name in required and (operation_id, name) not in DEFAULTED
    assert spec.body == kind

    signature = inspect.signature(getattr(Operations, snake(operation_id)).function)
    actual = {
        name: parameter.default is inspect.Parameter.empty
        for name, parameter in list(signature.parameters.items())[1:]
    }
    assert actual == expected
    assert spec.creates == (
        "Idempotency-Key" in {p["name"] for p in parameters(operation, document)}
    )
    assert spec.auth == (operation.get("security", document.get("security")) != [])
    assert spec.paged == ("cursor" in expected)


def test_method_names_are_the_operation_ids_in_snake_case() -> None:
    """``client.list_backups`` is ``listBackups``; both clients expose every one."""
    for operation_id in sdk_specs():
        name = snake(operation_id)
        assert getattr(Operations, name).spec.operation_id == operation_id
        assert callable(getattr(Client("http://x"), name))
        assert callable(getattr(AsyncClient("http://x"), name))
