"""Examples of the OpenAPI document, generated from its schemas, and a curl command for
every operation.

An example is composed from the examples of its parts: a schema's own ``examples`` (set
in a field's metadata), else a value made from its type, format and limits; objects hold
every field (or those its ``x-example-fields`` names: a coherent subset, for a body whose
fields exclude each other). ``add_examples`` fills in each operation's request and success
examples and its ``x-codeSamples`` once the document is built, so an example cannot
disagree with the schema it stands for (Redocly's lint checks them too).
"""

from __future__ import annotations

import copy
import json
import shlex
from typing import Any

Json = dict[str, Any]

UUID_EXAMPLE = "6f1c2b9e-3d4a-4e8b-9c1d-2a3b4c5d6e7f"
FORMATS = {
    "uuid": UUID_EXAMPLE,
    "date-time": "2031-01-01T09:30:00.000Z",
    "email": "ada@example.com",
    "uri": "https://strongroom.example.com/idp",
    "binary": "<bytes>",
}
TEXT = {
    "text/html": "<!doctype html><html>...</html>",
    "text/plain": "# TYPE http_requests_total counter\nhttp_requests_total 1\n",
}
# Placeholders of the curl commands, named as the shell variables a reader sets.
BASE_URL = "$STRONGROOM_URL"
TOKENS = {"bearerAuth": "$TOKEN", "idpAccessToken": "$IDP_ACCESS_TOKEN"}
SENT = ("application/json", "application/x-www-form-urlencoded", "application/octet-stream")


class Examples:
    """Example values of the schemas of one document."""

    def __init__(self, document: Json) -> None:
        components = document.get("components", {})
        self.schemas: dict[str, Json] = components.get("schemas", {})
        self.parameters: dict[str, Json] = components.get("parameters", {})

    def of(self, schema: Json) -> Any:
        """An example of ``schema``."""
        for keyword in ("examples", "enum"):
            if schema.get(keyword):
                return schema[keyword][0]
        if "$ref" in schema:
            return self.of(self.schemas[schema["$ref"].rsplit("/", 1)[-1]])
        for keyword in ("const", "default"):
            if keyword in schema:
                return schema[keyword]
        variants = [v for v in schema.get("oneOf", []) if v.get("type") != "null"]
        if variants:
            return self.of(variants[0])
        declared = schema.get("type")
        kinds = declared if isinstance(declared, list) else [declared]
        kind = next((k for k in kinds if k != "null"), None)
        if kind == "object" or "properties" in schema:
            extra = schema.get("additionalProperties")
            if "properties" not in schema and isinstance(extra, dict):
                return {"key": self.of(extra)}
            properties: Json = schema.get("properties", {})
            shown: list[str] = schema.get("x-example-fields", list(properties))
            return {name: self.of(properties[name]) for name in shown}
        if kind == "array":
            return [self.of(schema.get("items", {}))]
        if kind == "integer":
            return min(max(schema.get("minimum", 1), 1), schema.get("maximum", 1 << 30))
        if kind == "boolean":
            return True
        if kind == "string":
            text = FORMATS.get(schema.get("format", ""), "example")
            return text.ljust(schema.get("minLength", 0), "x")[: schema.get("maxLength")]
        return None

    def parameter(self, parameter: Json) -> Json:
        """A parameter, its ``$ref`` resolved."""
        target = parameter.get("$ref")
        return self.parameters[target.rsplit("/", 1)[-1]] if target else parameter

    def curl(self, method: str, path: str, operation: Json) -> str:
        """A curl command calling ``operation`` with its examples."""
        url = BASE_URL + path
        query = []
        for parameter in map(self.parameter, operation.get("parameters", [])):
            value = self.of(parameter.get("schema", {}))
            if parameter["in"] == "path":
                url = url.replace("{" + parameter["name"] + "}", str(value))
            elif parameter["in"] == "query" and parameter.get("required"):
                query.append(f"{parameter['name']}={value}")
        url += "?" + "&".join(query) if query else ""
        # Double quotes: the shell expands the base URL's variable (no other `$` is in a URL).
        parts = ["curl" if method == "GET" else f"curl -X {method}", f'"{url}"']
        for requirement in operation.get("security", []):
            parts += [f'-H "Authorization: Bearer {TOKENS[name]}"' for name in requirement]
        content = operation.get("requestBody", {}).get("content", {})
        for media_type, body in content.items():
            example = body.get("example")
            if media_type == SENT[0]:
                parts += [
                    f"-H 'Content-Type: {media_type}'",
                    "-d " + shlex.quote(json.dumps(example)),
                ]
            elif media_type == SENT[1]:
                parts += [
                    "--data-urlencode " + shlex.quote(f"{key}={value}")
                    for key, value in example.items()
                    if value is not None
                ]
            else:
                parts += [f"-H 'Content-Type: {media_type}'", "--data-binary @artifact.bin"]
        return " \\\n  ".join(parts)


def add_examples(document: Json) -> Json:
    """``document`` with an example for every request body and success body of every
    operation, and its curl command as ``x-codeSamples``."""
    document = copy.deepcopy(document)  # parts of it are shared constants
    examples = Examples(document)
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            bodies = [*operation.get("requestBody", {}).get("content", {}).items()]
            for status, response in operation.get("responses", {}).items():
                if status.startswith("2"):
                    bodies += response.get("content", {}).items()
            for media_type, body in bodies:
                if "example" not in body and "examples" not in body:
                    schema = body.get("schema", {})
                    body["example"] = TEXT.get(media_type) or examples.of(schema)
            source = examples.curl(method.upper(), path, operation)
            operation["x-codeSamples"] = [{"lang": "Shell", "label": "curl", "source": source}]
    return document
