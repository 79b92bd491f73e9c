"""The OpenAPI document's component schemas, generated from the attrs models of
``shapes`` and the named scalars of ``wire`` as the document meets them."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, NewType, Union, get_args, get_origin
from uuid import UUID

import attrs

from strongroom.adapters import wire
from strongroom.adapters import wire as shapes
from strongroom.adapters.webkit.declare import Json, prose, ref
from strongroom.domain.backups import UnsupportedSource
from strongroom.domain.buckets import BUCKET_PATTERN, BUCKET_RULE
from strongroom.domain.durations import Duration
from strongroom.domain.names import MAX_NAME_LENGTH
from strongroom.domain.permissions import Permission

DURATION_PATTERN = (
    r"^P(?=\d|T\d)(?:\d{1,12}W)?(?:\d{1,12}D)?"
    r"(?:T(?=\d)(?:\d{1,12}H)?(?:\d{1,12}M)?(?:\d{1,12}S)?)?$"
)


def nullable(schema: Json) -> Json:
    """``schema`` or ``null``."""
    if "type" not in schema or isinstance(schema["type"], list):
        return {"oneOf": [*schema.get("oneOf", [schema]), {"type": "null"}]}
    return {**schema, "type": [schema["type"], "null"]}


# Trimmed, 1 to MAX_NAME_LENGTH characters, none a control character (Cc); surrounding
# whitespace (which may be a control character) is trimmed.
_NAME_CHAR = r"[^\x00-\x1f\x7f-\x9f]"
_NAME_EDGE = r"[^\s\x00-\x1f\x7f-\x9f]"
NAME_PATTERN = rf"^\s*{_NAME_EDGE}(?:{_NAME_CHAR}{{0,{MAX_NAME_LENGTH - 2}}}{_NAME_EDGE})?\s*$"

# Named scalars: a component of their own (``$ref``) or an inline schema.
NAMED: dict[Any, tuple[str, Json]] = {
    wire.Name: (
        "Name",
        {
            "type": "string",
            "description": f"1 to {MAX_NAME_LENGTH} characters after trimming surrounding "
            "whitespace, no control characters; stored trimmed.",
            "minLength": 1,
            "pattern": NAME_PATTERN,
        },
    ),
    wire.RoleSlug: (
        "RoleSlug",
        {
            "type": "string",
            "description": "Lowercase letter, then 1 to 39 lowercase letters, digits or hyphens.",
            "pattern": "^[a-z][a-z0-9-]{1,39}$",
            "examples": ["ops"],
        },
    ),
    Duration: (
        "Duration",
        {
            "type": "string",
            "description": "ISO 8601 duration in weeks, days, hours, minutes and seconds only "
            "(`P30D`, `P4W`, `PT36H`), at most 36 500 days in all (400 beyond); months and "
            "years are refused. Returned in canonical "
            "form: weeks become days and zero parts are omitted (`P7D`, `P1DT12H`, `PT0S`).",
            "pattern": DURATION_PATTERN,
            "examples": ["P30D"],
        },
    ),
    Permission: ("PermissionSlug", {"type": "string", "enum": [p.value for p in Permission]}),
}
INLINE: dict[Any, Json] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    Any: {},
    UUID: {"type": "string", "format": "uuid"},
    datetime: {"type": "string", "format": "date-time", "description": shapes.TIMESTAMP},
    wire.NonEmpty: {"type": "string", "minLength": 1},
    wire.Endpoint: {"type": "string", "format": "uri", "examples": ["https://s3.example.com"]},
    wire.Uri: {"type": "string", "format": "uri"},
    wire.Email: {"type": "string", "format": "email"},
    wire.Port: {"type": "integer", "minimum": 1, "maximum": wire.MAX_PORT},
    wire.Bucket: {
        "type": "string",
        "minLength": 3,
        "maxLength": 63,
        "pattern": BUCKET_PATTERN,
        "description": f"An S3 bucket name: {BUCKET_RULE}.",
    },
}
# Not shown: PATCH sentinels, ``null`` (made ``nullable``), a source type never accepted.
SKIPPED = (*wire.SENTINELS, type(None), UnsupportedSource)


class Components:
    """The component schemas a document needs, generated as they are met."""

    def __init__(self) -> None:
        self.schemas: dict[str, Json] = {}

    def named(self, name: str, build: Callable[[], Json]) -> Json:
        """A ``$ref`` to ``name``, built on first use."""
        if name not in self.schemas:
            self.schemas[name] = {}
            self.schemas[name] = build()
        return ref(name)

    def of(self, kind: Any, inbound: bool = False) -> Json:
        """The schema of a type; ``inbound`` for request bodies (closed objects)."""
        kind = wire.VIEWS.get(kind, kind)
        if kind in NAMED:
            name, schema = NAMED[kind]
            return self.named(name, lambda: schema)
        if kind in INLINE:
            return dict(INLINE[kind])
        origin, args = get_origin(kind), get_args(kind)
        if origin in (Union, types.UnionType):
            members = [arg for arg in args if arg not in SKIPPED]
            schema = self.union(members, inbound)
            return nullable(schema) if type(None) in args else schema
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin in (list, frozenset, tuple):
            return {"type": "array", "items": self.of(args[0], inbound)}
        if origin in (dict, Mapping):
            return {"type": "object", "additionalProperties": self.of(args[1], inbound)}
        if isinstance(kind, type) and issubclass(kind, StrEnum):
            return {"type": "string", "enum": [member.value for member in kind]}
        if isinstance(kind, NewType):
            return self.of(kind.__supertype__, inbound)
        if attrs.has(kind):
            return self.model(kind, inbound)
        raise TypeError(f"no schema for {kind!r}")

    def union(self, members: list[Any], inbound: bool) -> Json:
        """``oneOf`` the members; a discriminator when each is tagged by ``type``."""
        variants = [self.of(member, inbound) for member in members]
        if len(variants) == 1:
            return variants[0]
        schema: Json = {"oneOf": variants}
        models = [wire.VIEWS.get(member, member) for member in members]
        tags = [_tag(model) for model in models]
        if all(tags):
            schema["discriminator"] = {
                "propertyName": "type",
                "mapping": {
                    tag: variant["$ref"] for tag, variant in zip(tags, variants, strict=True)
                },
            }
        return schema

    def model(self, model: type, inbound: bool) -> Json:
        """A ``$ref`` to the object schema of an attrs model."""
        name = getattr(model, "__schema_name__", model.__name__)
        if inbound and model in wire.VIEWS.values():
            name += "Input"
        return self.named(name, lambda: self.object(model, inbound))

    def object(self, model: type, inbound: bool) -> Json:
        """An object schema: every field, its description and wire options."""
        fields = attrs.fields(attrs.resolve_types(model))
        schema: Json = {"type": "object", "description": prose(model.__doc__)}
        properties: Json = {}
        required: list[str] = []
        for field in fields:
            key = field.metadata.get("rename", field.name)
            prop = self.of(field.metadata.get("schema_type", field.type), inbound)
            prop = {**prop, **field.metadata.get("schema", {})}
            description = field.metadata.get("description") or wire.field_docs(model).get(
                field.name
            )
            if description:
                prop["description"] = description
            properties[key] = prop
            always = get_origin(field.type) is Literal
            if (
                (always or field.default is attrs.NOTHING)
                if inbound
                else not field.metadata.get("optional")
            ):
                required.append(key)
        schema["properties"] = properties
        schema["required"] = required
        if hasattr(model, "__example_fields__"):
            schema["x-example-fields"] = list(model.__example_fields__)
        if inbound:
            # OAuth's forms ignore unknown parameters, each sent once (RFC 6749 3.1, 3.2).
            ignored = getattr(model, "__ignores_unknown__", False)
            schema["additionalProperties"] = {"type": "string"} if ignored else False
        return schema


def _tag(model: Any) -> str | None:
    if not attrs.has(model) or "type" not in attrs.fields_dict(model):
        return None
    default = attrs.fields_dict(model)["type"].default
    return default if isinstance(default, str) else None
