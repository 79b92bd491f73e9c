"""``GET /openapi.json`` and ``GET /docs``: the OpenAPI document and its reference page.

Both are public (no authentication) and built once per application: the JSON text and the
HTML page are rendered from ``openapi.document_for(app)`` on first use and cached in the
application's state. The page is self-contained (inline stylesheet, no script, no
external resource) and served with a Content-Security-Policy that allows only that
stylesheet, by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.http.openapi import HTML, Auth, Json, Routes, document_for

_STATE_KEY = "openapi_published"
_METHODS = ("get", "post", "put", "patch", "delete")

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d232a;background:#fff}
header,main,nav{max-width:72rem;margin:0 auto;padding:0 1.5rem}
header{padding-top:1.5rem}
h1{margin-bottom:.2rem}
h2{border-bottom:2px solid #d8dee4;padding-bottom:.3rem;margin-top:2.5rem}
h3{margin-bottom:.3rem}
code{font:13px/1.4 ui-monospace,monospace;background:#f3f5f7;padding:0 .25rem;border-radius:3px}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border:1px solid #d8dee4;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
article{border:1px solid #d8dee4;border-radius:6px;padding:0 1rem .5rem;margin:1.2rem 0}
.method{display:inline-block;min-width:4.2rem;font:bold 13px ui-monospace,monospace;
color:#fff;background:#57606a;border-radius:3px;padding:.1rem .4rem;text-align:center}
.method-get{background:#0969da}.method-post{background:#1a7f37}
.method-patch{background:#9a6700}.method-delete{background:#cf222e}
.summary{font-weight:600}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}
dt{font-weight:600}dd{margin:0}
nav ul{columns:2;padding-left:1.2rem}
.muted{color:#57606a}
pre{background:#f3f5f7;padding:.5rem .75rem;border-radius:4px;overflow-x:auto}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


routes = Routes("Documentation", auth=Auth.NONE)


@attrs.frozen
class Published:
    """The document as served: its JSON text and its HTML page."""

    json: bytes
    html: str


def published(app: Starlette) -> Published:
    """The rendered document of ``app``, built on first use and cached in its state."""
    cached: Published | None = getattr(app.state, _STATE_KEY, None)
    if cached is None:
        document = document_for(app)
        cached = Published(
            json=json.dumps(document, ensure_ascii=False).encode("utf-8"),
            html=render_page(document),
        )
        setattr(app.state, _STATE_KEY, cached)
    return cached


@routes.get(
    "/openapi.json",
    {"application/json": {"schema": {"type": "object"}}},
    "The document.",
)
async def get_open_api_document(request: Request) -> Response:
    """This OpenAPI document

    The OpenAPI 3.1 description of every operation. No authentication."""
    return Response(published(request.app).json, media_type="application/json")


@routes.get("/docs", HTML, "The page.")
async def get_docs_page(request: Request) -> Response:
    """API reference page

    This document as a self-contained HTML page. No authentication."""
    return Response(
        published(request.app).html,
        media_type="text/html; charset=utf-8",
        headers=PAGE_HEADERS,
    )


# --------------------------------------------------------------------------------------
# Rendering: every value taken from the document goes through ``_e`` (HTML escaping).


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


_CODE_SPAN = re.compile(r"`([^`]*)`")


def _inline(text: str) -> str:
    """Escaped text with ``code`` spans."""
    return _CODE_SPAN.sub(r"<code>\1</code>", _e(text))


def _prose(text: str) -> str:
    """Paragraphs and ``- `` lists of a description, escaped."""
    parts: list[str] = []
    for block in text.strip().split("\n\n"):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        if all(line.startswith("- ") for line in lines):
            items = "".join(f"<li>{_inline(line[2:])}</li>" for line in lines)
            parts.append(f"<ul>{items}</ul>")
        else:
            parts.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "".join(parts)


class _Renderer:
    """Renders one document."""

    def __init__(self, document: Json) -> None:
        self.document = document
        components = document.get("components", {})
        self.schemas: dict[str, Json] = components.get("schemas", {})
        self.parameters: dict[str, Json] = components.get("parameters", {})

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
            name = target.rsplit("/", 1)[-1]
            return f'<a href="#schema-{_e(name)}">{_e(name)}</a>'
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                return " or ".join(self.type_label(variant) for variant in schema[combinator])
        if "const" in schema:
            return f"<code>{_e(json.dumps(schema['const']))}</code>"
        if "enum" in schema:
            values = ", ".join(f"<code>{_e(json.dumps(value))}</code>" for value in schema["enum"])
            return f"one of {values}"
        declared = schema.get("type")
        types = declared if isinstance(declared, list) else [declared] if declared else []
        if not types:
            return "any"
        return " or ".join(self._single_type(schema, kind) for kind in types)

    def _single_type(self, schema: Json, kind: str) -> str:
        if kind == "array":
            return f"array of {self.type_label(schema.get('items', {}))}"
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            return f"map of string to {self.type_label(schema['additionalProperties'])}"
        if kind == "string" and "format" in schema:
            return f"string ({_e(schema['format'])})"
        return _e(kind)

    @staticmethod
    def constraints(schema: Json) -> str:
        """Limits of a schema (length, range, pattern, default), as a sentence."""
        notes = [
            f"{label} {_e(json.dumps(schema[key]))}"
            for key, label in (
                ("minLength", "min length"),
                ("maxLength", "max length"),
                ("minimum", "minimum"),
                ("maximum", "maximum"),
                ("default", "default"),
                ("pattern", "pattern"),
            )
            if key in schema
        ]
        if schema.get("writeOnly"):
            notes.append("write-only")
        if schema.get("additionalProperties") is False:
            notes.append("no other fields")
        return f'<span class="muted">{"; ".join(notes)}.</span>' if notes else ""

    def field_rows(self, schema: Json, prefix: str = "") -> list[str]:
        """Table rows of an object's fields; inline nested objects are expanded."""
        rows: list[str] = []
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            full = f"{prefix}{name}"
            description = _prose(prop.get("description", ""))
            rows.append(
                f"<tr><td><code>{_e(full)}</code></td><td>{self.type_label(prop)}</td>"
                f"<td>{'yes' if name in required else 'no'}</td>"
                f"<td>{description}{self.constraints(prop)}</td></tr>"
            )
            if "properties" in prop:
                rows.extend(self.field_rows(prop, f"{full}."))
        return rows

    def fields_table(self, schema: Json) -> str:
        """The fields of an object schema (resolving a top-level ``$ref``)."""
        resolved = self.resolve(schema)
        rows = self.field_rows(resolved)
        head = "<tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr>"
        note = self.constraints(resolved)
        if not rows:
            return f"<p>No fields. {note}</p>"
        return f"<table>{head}{''.join(rows)}</table>{f'<p>{note}</p>' if note else ''}"

    def render(self) -> str:
        """The whole page."""
        info = self.document.get("info", {})
        title = _e(info.get("title", "API"))
        return "".join(
            [
                '<!doctype html><html lang="en"><head><meta charset="utf-8">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                f"<title>{title} reference</title><style>{STYLE}</style></head><body>",
                f"<header><h1>{title}</h1>",
                f'<p class="muted">Version {_e(info.get("version", ""))} · OpenAPI '
                f"{_e(self.document.get('openapi', ''))} · machine-readable at "
                '<a href="/openapi.json"><code>/openapi.json</code></a></p>',
                _prose(info.get("description", "")),
                "</header>",
                self.contents(),
                "<main>",
                self.authentication(),
                self.errors(),
                self.common_parameters(),
                self.operations(),
                self.schema_section(),
                "</main></body></html>",
            ]
        )

    def _operations(self) -> list[tuple[str, str, Json]]:
        found: list[tuple[str, str, Json]] = []
        for path, item in self.document.get("paths", {}).items():
            for method in _METHODS:
                if method in item:
                    found.append((method, path, item[method]))
        return found

    def _tags(self) -> list[tuple[str, str]]:
        return [(tag["name"], tag.get("description", "")) for tag in self.document.get("tags", [])]

    def contents(self) -> str:
        """The table of contents: every operation, by tag."""
        parts = [
            '<nav><h2>Contents</h2><ul><li><a href="#authentication">Authentication</a>',
            '</li><li><a href="#errors">Errors</a></li>',
            '<li><a href="#parameters">Common parameters</a></li>',
            '<li><a href="#schemas">Schemas</a></li></ul>',
        ]
        for tag, _ in self._tags():
            items = [
                f'<li><a href="#op-{_e(op["operationId"])}"><code>{_e(method.upper())} '
                f"{_e(path)}</code></a> {_e(op.get('summary', ''))}</li>"
                for method, path, op in self._operations()
                if tag in op.get("tags", [])
            ]
            parts.append(f"<h3>{_e(tag)}</h3><ul>{''.join(items)}</ul>")
        parts.append("</nav>")
        return "".join(parts)

    def authentication(self) -> str:
        """The security schemes."""
        schemes = self.document.get("components", {}).get("securitySchemes", {})
        rows = "".join(
            f"<tr><td><code>{_e(name)}</code></td><td>{_e(scheme.get('type', ''))} "
            f"{_e(scheme.get('scheme', ''))}</td><td>{_prose(scheme.get('description', ''))}"
            "</td></tr>"
            for name, scheme in schemes.items()
        )
        return (
            '<section id="authentication"><h2>Authentication</h2><table><tr><th>Scheme</th>'
            f"<th>Type</th><th>Description</th></tr>{rows}</table></section>"
        )

    def errors(self) -> str:
        """The error envelope and every error code."""
        rows = "".join(
            f"<tr><td><code>{_e(entry['code'])}</code></td><td>{_e(entry['status'])}</td>"
            f"<td>{_prose(entry.get('description', ''))}</td></tr>"
            for entry in self.document.get("x-error-codes", [])
        )
        envelope = self.fields_table({"$ref": "#/components/schemas/Error"})
        return (
            '<section id="errors"><h2>Errors</h2><p>Every failure answers this envelope '
            "(except the OAuth errors of <code>POST /idp/token</code>):</p>"
            f"{envelope}<table><tr><th>Code</th><th>Status</th><th>Meaning</th></tr>{rows}"
            "</table></section>"
        )

    def parameter_rows(self, parameters: list[Json]) -> str:
        """A table of parameters."""
        rows = []
        for parameter in parameters:
            resolved = self.resolve(parameter)
            schema = resolved.get("schema", {})
            rows.append(
                f"<tr><td><code>{_e(resolved['name'])}</code></td><td>{_e(resolved['in'])}</td>"
                f"<td>{self.type_label(schema)}</td>"
                f"<td>{'yes' if resolved.get('required') else 'no'}</td>"
                f"<td>{_prose(resolved.get('description', ''))}{self.constraints(schema)}</td>"
                "</tr>"
            )
        return (
            "<table><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th>"
            f"<th>Description</th></tr>{''.join(rows)}</table>"
        )

    def common_parameters(self) -> str:
        """The reusable parameters."""
        table = self.parameter_rows(
            [{"$ref": f"#/components/parameters/{name}"} for name in self.parameters]
        )
        return f'<section id="parameters"><h2>Common parameters</h2>{table}</section>'

    def operations(self) -> str:
        """Every operation, grouped by tag."""
        parts = []
        for tag, description in self._tags():
            parts.append(f"<section><h2>{_e(tag)}</h2>{_prose(description)}")
            parts.extend(
                self.operation(method, path, op)
                for method, path, op in self._operations()
                if tag in op.get("tags", [])
            )
            parts.append("</section>")
        return "".join(parts)

    def operation(self, method: str, path: str, op: Json) -> str:
        """One operation."""
        inherited: list[Json] = self.document.get("security", [])
        security: list[Json] = op.get("security", inherited)
        schemes = sorted({name for requirement in security for name in requirement})
        auth = ", ".join(f"bearer (<code>{_e(name)}</code>)" for name in schemes) or "none"
        slugs = op.get("x-permissions", [])
        permission = " or ".join(f"<code>{_e(slug)}</code>" for slug in slugs) or "none"
        parts = [
            f'<article id="op-{_e(op["operationId"])}">',
            f'<h3><span class="method method-{_e(method)}">{_e(method.upper())}</span> '
            f"<code>{_e(path)}</code></h3>",
            f'<p class="summary">{_e(op.get("summary", ""))}</p>',
            _prose(op.get("description", "")),
            f"<dl><dt>Authentication</dt><dd>{auth}</dd>",
            f"<dt>Permission</dt><dd>{permission}</dd>",
            f"<dt>Error codes</dt><dd>{self.error_codes(op)}</dd></dl>",
        ]
        if op.get("parameters"):
            parts.append(f"<h4>Parameters</h4>{self.parameter_rows(op['parameters'])}")
        body = op.get("requestBody")
        if body:
            for media_type, content in body.get("content", {}).items():
                need = "required" if body.get("required") else "optional"
                parts.append(
                    f"<h4>Request body</h4><p><code>{_e(media_type)}</code>, {need}: "
                    f"{self.type_label(content.get('schema', {}))}</p>"
                    f"{self.fields_table(content.get('schema', {}))}"
                )
        parts.append(self.responses(op.get("responses", {})))
        parts.append(self.examples(op))
        parts.append("</article>")
        return "".join(parts)

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
            f"<h4>Example: {_e(sample['label'])}</h4><pre><code>{_e(sample['source'])}</code></pre>"
            for sample in op.get("x-codeSamples", [])
        ]
        for label, body in shown:
            if "example" in body:
                example = body["example"]
                text = example if isinstance(example, str) else json.dumps(example, indent=2)
                parts.append(f"<h4>{label} example</h4><pre><code>{_e(text)}</code></pre>")
        return "".join(parts)

    @staticmethod
    def error_codes(op: Json) -> str:
        """Every error code an operation lists, with its status."""
        codes = [
            f"<code>{_e(code)}</code> ({_e(status)})"
            for status, response in op.get("responses", {}).items()
            if not status.startswith("2")
            for content in response.get("content", {}).values()
            for code in content.get("examples", {})
        ]
        return ", ".join(codes) or "none"

    def responses(self, responses: Json) -> str:
        """The responses table."""
        rows = []
        for status, response in responses.items():
            bodies = (
                "<br>".join(
                    f"<code>{_e(media_type)}</code>: {self.type_label(content.get('schema', {}))}"
                    for media_type, content in response.get("content", {}).items()
                )
                or "no body"
            )
            rows.append(
                f"<tr><td>{_e(status)}</td><td>{_prose(response.get('description', ''))}</td>"
                f"<td>{bodies}</td></tr>"
            )
        return (
            "<h4>Responses</h4><table><tr><th>Status</th><th>Description</th><th>Body</th></tr>"
            f"{''.join(rows)}</table>"
        )

    def schema_section(self) -> str:
        """Every component schema with its fields."""
        parts = ['<section id="schemas"><h2>Schemas</h2>']
        for name, schema in self.schemas.items():
            parts.append(
                f'<h3 id="schema-{_e(name)}">{_e(name)}</h3>{_prose(schema.get("description", ""))}'
            )
            if schema.get("type") == "object":
                parts.append(self.fields_table(schema))
            else:
                parts.append(f"<p>{self.type_label(schema)} {self.constraints(schema)}</p>")
        parts.append("</section>")
        return "".join(parts)


def render_page(document: Json) -> str:
    """The reference page of ``document``: self-contained HTML, every value escaped."""
    return _Renderer(document).render()
