"""The served OpenAPI document's examples and its lint (contract 13): every operation has
a curl command and an example of its request body and success body, generated from the
shapes; each example fits its schema and is accepted by the strict body parser; ``/docs``
shows them; and Redocly's recommended lint passes with no error and no warning. Redocly
CLI is pinned in tests/redocly (``npm ci`` installs it; ``scripts/test`` does so when it is
missing); its configuration and the reasoned exceptions live beside it."""

from __future__ import annotations

import json
import shutil
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import attrs
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from strongroom.adapters.http.app import document as build_document
from strongroom.adapters.http.app import operations
from strongroom.adapters.wire.converter import structure
from support.world import Api, bearer

Json = dict[str, Any]
REDOCLY = Path(__file__).resolve().parent.parent / "redocly"
BINARY = REDOCLY / "node_modules" / ".bin" / "redocly"
DOC_URI = "urn:strongroom:openapi"


@pytest.fixture
def document(api: Api) -> Json:
    """The document as the running application serves it."""
    served: Json = api.client.get("/openapi.json").json()
    return served


def each_operation(document: Json) -> list[tuple[str, str, Json]]:
    """``(METHOD, path, operation)`` of every operation."""
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def bodies(operation: Json) -> list[tuple[str, Json]]:
    """``(media type, media object)`` of the request body and every success response."""
    shown = list(operation.get("requestBody", {}).get("content", {}).items())
    for status, response in operation["responses"].items():
        if status.startswith("2"):
            shown += response.get("content", {}).items()
    return shown


def errors_of(document: Json, schema: Json, value: Any) -> list[str]:
    """Where ``value`` breaks ``schema`` (JSON Schema 2020-12, formats checked)."""
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(DOC_URI, resource)
    target = {"$ref": DOC_URI + schema["$ref"]} if "$ref" in schema else schema
    validator = Draft202012Validator(
        target, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    return [
        f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)
    ]


def test_every_operation_has_examples_that_fit_their_schemas(document: Json) -> None:
    """A request example when there is a body, a success example when it has content, and
    each validates against its schema."""
    for method, path, operation in each_operation(document):
        for media_type, body in bodies(operation):
            assert "example" in body, (method, path, media_type)
            if media_type == "application/json":
                problems = errors_of(document, body["schema"], body["example"])
                assert not problems, (method, path, problems)


def test_request_examples_pass_the_strict_body_parser() -> None:
    """Every JSON body example structures into its request model (no unknown field, no
    wrong type): what the document shows, the server accepts."""
    document = build_document()
    checked = 0
    for operation in operations():
        if not attrs.has(operation.body) or operation.media_type != "application/json":
            continue
        if operation.method == "DELETE":
            continue
        documented = document["paths"][operation.path][operation.method.lower()]
        example = documented["requestBody"]["content"]["application/json"]["example"]
        structure(example, operation.body)
        checked += 1
    assert checked > 10


def test_curl_commands_name_the_method_url_credential_and_body(document: Json) -> None:
    """Each curl command calls the operation's method on its path under the base URL
    placeholder, with the bearer it needs and its JSON body."""
    for method, path, operation in each_operation(document):
        (sample,) = operation["x-codeSamples"]
        source = sample["source"]
        assert source.startswith("curl" if method == "GET" else f"curl -X {method}"), source
        prefix = path.split("{")[0]
        assert f'"$STRONGROOM_URL{prefix}' in source, source
        assert "{" not in source.split('"')[1], source  # path parameters filled in
        assert ("Authorization: Bearer $" in source) == bool(operation["security"]), source
        content = operation.get("requestBody", {}).get("content", {})
        if "application/json" in content:
            sent = source.split("-d '", 1)[1].rsplit("'", 1)[0]
            assert json.loads(sent) == content["application/json"]["example"]


def test_a_curl_example_body_is_accepted_by_the_running_api(api: Api, document: Json) -> None:
    """The create-workspace and create-backup examples, sent as documented, succeed."""
    token = api.person("ada@example.com")
    operation = document["paths"]["/v1/workspaces"]["post"]
    example = operation["requestBody"]["content"]["application/json"]["example"]
    created = api.client.post("/v1/workspaces", json=example, headers=bearer(token))
    assert created.status_code == 201, created.text
    admin, workspace_id = api.workspace_admin("una@example.com")
    operation = document["paths"]["/v1/workspaces/{wid}/backups"]["post"]
    example = operation["requestBody"]["content"]["application/json"]["example"]
    response = api.client.post(
        f"/v1/workspaces/{workspace_id}/backups", json=example, headers=bearer(admin)
    )
    assert response.status_code == 201, response.text


def test_docs_page_shows_every_curl_command_and_example(api: Api, document: Json) -> None:
    """``/docs`` shows each operation's curl command and its examples."""
    page = api.client.get("/docs").text
    for _, _, operation in each_operation(document):
        assert escape(operation["x-codeSamples"][0]["source"]) in page
        for _, body in bodies(operation):
            example = body["example"]
            text = example if isinstance(example, str) else json.dumps(example, indent=2)
            assert escape(text) in page


def test_document_passes_redocly_recommended_lint(api: Api, tmp_path: Path) -> None:
    """``redocly lint`` (recommended rules) reports 0 errors and 0 warnings."""
    assert BINARY.exists(), "run `npm ci` in tests/redocly (scripts/test does)"
    document = api.client.get("/openapi.json").json()
    (tmp_path / "openapi.json").write_text(json.dumps(document, indent=1))
    for name in ("redocly.yaml", ".redocly.lint-ignore.yaml"):
        shutil.copy(REDOCLY / name, tmp_path / name)
    result = subprocess.run(
        [str(BINARY), "lint", "--format=summary", "openapi.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "Woohoo! Your API description is valid." in report, report
    assert "\nerror " not in report, report
    assert "\nwarning " not in report, report
