"""The reference page of an OpenAPI document (``GET /docs``).

The page's skeleton and stylesheet are the template ``templates/reference.html``; this
module renders the document's parts into it. Every value taken from the document goes
through ``_e`` (HTML escaping); descriptions keep their `code` spans and ``- `` lists.
"""

from __future__ import annotations

import html
import json
import re
import string
from collections.abc import Iterable
from importlib import resources
from typing import Any

Json = dict[str, Any]

TEMPLATE = string.Template(
    resources.files("strongroom.adapters.http")
    .joinpath("templates/reference.html")
    .read_text(encoding="utf-8")
)
STYLE = TEMPLATE.template.split("<style>", 1)[1].split("</style>", 1)[0]
METHODS = ("get", "post", "put", "patch", "delete")
LIMITS = {
    "minLength": "min length",
    "maxLength": "max length",
    "minimum": "minimum",
    "maximum": "maximum",
    "default": "default",
    "pattern": "pattern",
}
_CODE_SPAN = re.compile(r"`([^`]*)`")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _code(value: Any) -> str:
    return f"<code>{_e(value)}</code>"


def _prose(text: str) -> str:
    """Paragraphs and ``- `` lists of a description, escaped, with ``code`` spans."""
    parts: list[str] = []
    for block in text.strip().split("\n\n"):
        lines = [_CODE_SPAN.sub(r"<code>\1</code>", _e(line)) for line in block.split("\n")]
        lines = [line for line in lines if line.strip()]
        if lines and all(line.startswith("- ") for line in lines):
            parts.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>")
        elif lines:
            parts.append(f"<p>{' '.join(lines)}</p>")
    return "".join(parts)


def _table(head: str, rows: Iterable[Iterable[str]]) -> str:
    """A table: ``head`` names its columns (comma-separated), each row holds cells' markup."""
    header = "".join(f"<th>{name}</th>" for name in head.split(","))
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{header}</tr>{body}</table>"


def _example(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2)


class _Renderer:
    """Renders one document."""

    def __init__(self, document: Json) -> None:
        self.document = document
        components = document.get("components", {})
        self.schemas: dict[str, Json] = components.get("schemas", {})
        self.parameters: dict[str, Json] = components.get("parameters", {})
        self.operations = [
            (method, path, item[method])
            for path, item in document.get("paths", {}).items()
            for method in METHODS
            if method in item
        ]
        self.tags = [(tag["name"], tag.get("description", "")) for tag in document.get("tags", [])]

    def resolve(self, item: Json) -> Json:
        """The schema or parameter a ``$ref`` names (or ``item`` itself)."""
        target = item.get("$ref")
        if not isinstance(target, str):
            return item
        _, _, kind, name = target.split("/", 3)
        table = self.schemas if kind == "schemas" else self.parameters
        return {**table[name], **{k: v for k, v in item.items() if k != "$ref"}}

    def type_label(self, schema: Json) -> str:
        """A short, linked description of a schema's type."""
        target = schema.get("$ref")
        if isinstance(target, str):
            name = _e(target.rsplit("/", 1)[-1])
            return f'<a href="#schema-{name}">{name}</a>'
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                return " or ".join(map(self.type_label, schema[combinator]))
        if "const" in schema:
            return _code(json.dumps(schema["const"]))
        if "enum" in schema:
            return "one of " + ", ".join(_code(json.dumps(value)) for value in schema["enum"])
        declared = schema.get("type")
        kinds = declared if isinstance(declared, list) else [declared] if declared else []
        return " or ".join(self.single_type(schema, kind) for kind in kinds) or "any"

    def single_type(self, schema: Json, kind: str) -> str:
        """The label of one of a schema's types."""
        extra = schema.get("additionalProperties")
        if kind == "array":
            return f"array of {self.type_label(schema.get('items', {}))}"
        if kind == "object" and isinstance(extra, dict):
            return f"map of string to {self.type_label(extra)}"
        if kind == "string" and "format" in schema:
            return f"string ({_e(schema['format'])})"
        return _e(kind)

    @staticmethod
    def constraints(schema: Json) -> str:
        """Limits of a schema (length, range, pattern, default), as a sentence."""
        notes = [
            f"{label} {_e(json.dumps(schema[key]))}"
            for key, label in LIMITS.items()
            if key in schema
        ]
        notes += ["write-only"] if schema.get("writeOnly") else []
        notes += ["no other fields"] if schema.get("additionalProperties") is False else []
        return f'<span class="muted">{"; ".join(notes)}.</span>' if notes else ""

    def field_rows(self, schema: Json, prefix: str = "") -> list[list[str]]:
        """Rows of an object's fields; inline nested objects are expanded."""
        rows: list[list[str]] = []
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            described = _prose(prop.get("description", "")) + self.constraints(prop)
            needed = "yes" if name in required else "no"
            rows.append([_code(prefix + name), self.type_label(prop), needed, described])
            if "properties" in prop:
                rows.extend(self.field_rows(prop, f"{prefix}{name}."))
        return rows

    def fields_table(self, schema: Json) -> str:
        """The fields of an object schema (resolving a top-level ``$ref``)."""
        resolved = self.resolve(schema)
        rows, note = self.field_rows(resolved), self.constraints(resolved)
        if not rows:
            return f"<p>No fields. {note}</p>"
        return _table("Field,Type,Required,Description", rows) + (f"<p>{note}</p>" if note else "")

    def parameter_table(self, parameters: list[Json]) -> str:
        """A table of parameters."""
        rows = []
        for parameter in map(self.resolve, parameters):
            schema = parameter.get("schema", {})
            described = _prose(parameter.get("description", "")) + self.constraints(schema)
            needed = "yes" if parameter.get("required") else "no"
            label = self.type_label(schema)
            rows.append([_code(parameter["name"]), _e(parameter["in"]), label, needed, described])
        return _table("Name,In,Type,Required,Description", rows)

    def of_tag(self, tag: str) -> list[tuple[str, str, Json]]:
        """The operations of ``tag``."""
        return [entry for entry in self.operations if tag in entry[2].get("tags", [])]

    def contents(self) -> str:
        """The table of contents: every operation, by tag."""
        return "".join(
            f"<h3>{_e(tag)}</h3><ul>"
            + "".join(
                f'<li><a href="#op-{_e(op["operationId"])}">{_code(f"{method.upper()} {path}")}'
                f"</a> {_e(op.get('summary', ''))}</li>"
                for method, path, op in self.of_tag(tag)
            )
            + "</ul>"
            for tag, _ in self.tags
        )

    def operation(self, method: str, path: str, op: Json) -> str:
        """One operation."""
        inherited: list[Json] = self.document.get("security") or []
        security: list[Json] = op.get("security", inherited)
        schemes = sorted({name for requirement in security for name in requirement})
        auth = ", ".join(f"bearer ({_code(name)})" for name in schemes) or "none"
        permission = " or ".join(map(_code, op.get("x-permissions", []))) or "none"
        parts = [
            f'<article id="op-{_e(op["operationId"])}"><h3><span class="method method-'
            f'{_e(method)}">{_e(method.upper())}</span> {_code(path)}</h3>',
            f'<p class="summary">{_e(op.get("summary", ""))}</p>',
            _prose(op.get("description", "")),
            f"<dl><dt>Authentication</dt><dd>{auth}</dd><dt>Permission</dt><dd>{permission}</dd>",
            f"<dt>Error codes</dt><dd>{self.error_codes(op)}</dd></dl>",
        ]
        if op.get("parameters"):
            parts.append(f"<h4>Parameters</h4>{self.parameter_table(op['parameters'])}")
        body = op.get("requestBody", {})
        for media_type, content in body.get("content", {}).items():
            need, schema = "required" if body.get("required") else "optional", content["schema"]
            parts.append(
                f"<h4>Request body</h4><p>{_code(media_type)}, {need}: {self.type_label(schema)}"
                f"</p>{self.fields_table(schema)}"
            )
        parts += [self.responses(op.get("responses", {})), self.examples(op), "</article>"]
        return "".join(parts)

    @staticmethod
    def error_codes(op: Json) -> str:
        """Every error code an operation lists, with its status."""
        codes = [
            f"{_code(code)} ({_e(status)})"
            for status, response in op.get("responses", {}).items()
            if not status.startswith("2")
            for content in response.get("content", {}).values()
            for code in content.get("examples", {})
        ]
        return ", ".join(codes) or "none"

    def responses(self, responses: Json) -> str:
        """The responses table."""
        rows = [
            [
                _e(status),
                _prose(response.get("description", "")),
                "<br>".join(
                    f"{_code(media_type)}: {self.type_label(content.get('schema', {}))}"
                    for media_type, content in response.get("content", {}).items()
                )
                or "no body",
            ]
            for status, response in responses.items()
        ]
        return "<h4>Responses</h4>" + _table("Status,Description,Body", rows)

    @staticmethod
    def examples(op: Json) -> str:
        """The operation's curl command and the examples of its request and success bodies."""
        shown = [
            ("Request", body) for body in op.get("requestBody", {}).get("content", {}).values()
        ]
        shown += [
            (f"Response {status}", body)
            for status, response in op.get("responses", {}).items()
            if status.startswith("2")
            for body in response.get("content", {}).values()
        ]
        parts = [
            f"<h4>Example: {_e(sample['label'])}</h4><pre>{_code(sample['source'])}</pre>"
            for sample in op.get("x-codeSamples", [])
        ]
        parts += [
            f"<h4>{label} example</h4><pre>{_code(_example(body['example']))}</pre>"
            for label, body in shown
            if "example" in body
        ]
        return "".join(parts)

    def schema(self, name: str, schema: Json) -> str:
        """One component schema with its fields."""
        heading = (
            f'<h3 id="schema-{_e(name)}">{_e(name)}</h3>{_prose(schema.get("description", ""))}'
        )
        if schema.get("type") == "object":
            return heading + self.fields_table(schema)
        return f"{heading}<p>{self.type_label(schema)} {self.constraints(schema)}</p>"

    @staticmethod
    def scheme(named: tuple[str, Json]) -> list[str]:
        """A row of the security schemes."""
        name, scheme = named
        kind = f"{scheme.get('type', '')} {scheme.get('scheme', '')}"
        return [_code(name), _e(kind), _prose(scheme.get("description", ""))]

    def render(self) -> str:
        """The whole page."""
        info = self.document.get("info", {})
        schemes = self.document.get("components", {}).get("securitySchemes", {})
        error_codes = self.document.get("x-error-codes", [])
        return TEMPLATE.substitute(
            title=_e(info.get("title", "API")),
            version=_e(info.get("version", "")),
            openapi=_e(self.document.get("openapi", "")),
            introduction=_prose(info.get("description", "")),
            contents=self.contents(),
            authentication=_table("Scheme,Type,Description", map(self.scheme, schemes.items())),
            errors=self.fields_table({"$ref": "#/components/schemas/Error"})
            + _table(
                "Code,Status,Meaning",
                (
                    [
                        _code(entry["code"]),
                        _e(entry["status"]),
                        _prose(entry.get("description", "")),
                    ]
                    for entry in error_codes
                ),
            ),
            parameters=self.parameter_table(
                [{"$ref": f"#/components/parameters/{name}"} for name in self.parameters]
            ),
            operations="".join(
                f"<section><h2>{_e(tag)}</h2>{_prose(description)}"
                + "".join(self.operation(*entry) for entry in self.of_tag(tag))
                + "</section>"
                for tag, description in self.tags
            ),
            schemas="".join(self.schema(name, schema) for name, schema in self.schemas.items()),
        )


def render_page(document: Json) -> str:
    """The reference page of ``document``: self-contained HTML, every value escaped."""
    return _Renderer(document).render()
