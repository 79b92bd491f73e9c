"""The tolerant converter: the API's answers read into the same models, for a client.

A newer server must not break an older client: unknown fields are ignored, a field a
model holds that the answer leaves out is ``None`` where it may be, an enum value the
client does not know stays a string, a source type it does not know is an
``UnsupportedSource``. A value the server's models type by its domain class (a backup's
``retention``, ``source``, ``schedule``) is read into that class's view (``Retention``,
``S3Source``, ``Schedule``), the class a client also builds to send. Writing (a request
body) is the strict converter's presenting, so a client sends what the server reads.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from strongroom.adapters.wire.artifacts import MultipartUpload, SingleUpload, UploadPlan
from strongroom.adapters.wire.binding import DESTINATIONS, SOURCES, tag
from strongroom.adapters.wire.converter import CONVERTER
from strongroom.adapters.wire.views import VIEWS
from strongroom.domain.backups import UnsupportedSource
from strongroom.domain.durations import Duration

# The classes of every union tagged by ``type``: the domain's and their views.
_TAGGED = {*get_args(SOURCES), *get_args(DESTINATIONS)}


def _class(kind: Any) -> Any:
    """The class of a model, of a generic one (``Page[Backup]``) too."""
    origin: Any = get_origin(kind)
    return origin or kind


def _model(kind: Any) -> bool:
    return attrs.has(_class(kind))


def _literal(kind: Any) -> bool:
    origin: Any = get_origin(kind)
    return origin is Literal


def _enum_or_text(value: Any, enum: type[StrEnum]) -> StrEnum | str:
    try:
        return enum(value)
    except ValueError:
        return str(value)


def _admits_none(kind: Any) -> bool:
    origin: Any = get_origin(kind)
    return kind is Any or (origin in (Union, UnionType) and type(None) in get_args(kind))


def _members(kind: Any) -> set[Any]:
    origin: Any = get_origin(kind)
    if origin not in (Union, UnionType):
        return set()
    return {arg for arg in get_args(kind) if arg is not type(None)}


def _by_tag(converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """A source or destination, by its ``type``, into its view."""
    views = {tag(member): VIEWS[member] for member in _TAGGED}

    def structure(value: Any, _kind: Any) -> Any:
        if value is None:
            return None
        found = value.get("type") if isinstance(value, dict) else None
        model = views.get(found) if isinstance(found, str) else None
        if model is None:
            return UnsupportedSource(str(found))
        return converter.structure(value, model)

    return structure


def _upload_plan(converter: cattrs.Converter) -> Callable[[Any, Any], UploadPlan]:
    def structure(value: Any, _kind: Any) -> UploadPlan:
        if isinstance(value, dict) and "parts" in value:
            return converter.structure(value, MultipartUpload)
        return converter.structure(value, SingleUpload)

    return structure


def _tagged_union(kind: Any) -> bool:
    members = _members(kind) - {UnsupportedSource}
    return (
        bool(members)
        and all(m in _TAGGED or m in VIEWS.values() for m in members)
        and all(attrs.has(m) and "type" in attrs.fields_dict(m) for m in members)
    )


def _models(converter: cattrs.Converter) -> Callable[[Any], Callable[[Any, Any], Any]]:
    """Each model read by its wire names, extra keys ignored, a missing nullable field
    ``None``."""

    def factory(kind: Any) -> Callable[[Any, Any], Any]:
        cls = _class(kind)
        fields = attrs.fields(attrs.resolve_types(cls))
        renamed: dict[str, Any] = {
            field.name: override(rename=field.metadata["rename"])
            for field in fields
            if "rename" in field.metadata
        }
        base = make_dict_structure_fn(kind, converter, **renamed)
        nullable = [
            field.metadata.get("rename", field.name)
            for field in fields
            if field.default is attrs.NOTHING and _admits_none(field.type)
        ]

        def structure(value: Any, _kind: Any) -> Any:
            if isinstance(value, dict):
                value = {**dict.fromkeys(nullable), **value}
            return base(value, kind)

        return structure

    return factory


def make_tolerant_converter() -> cattrs.Converter:
    """The client's converter: tolerant reading, strict writing."""
    converter = cattrs.Converter(forbid_extra_keys=False)
    converter.register_structure_hook(datetime, lambda value, _: datetime.fromisoformat(value))
    converter.register_structure_hook(UUID, lambda value, _: UUID(str(value)))
    converter.register_structure_hook(Duration, lambda value, _: Duration.parse(str(value)))
    converter.register_structure_hook(StrEnum, _enum_or_text)
    converter.register_structure_hook_func(_literal, lambda value, _: value)
    converter.register_structure_hook_factory(_model, _models(converter))
    converter.register_structure_hook_func(
        lambda kind: kind in VIEWS, lambda value, kind: converter.structure(value, VIEWS[kind])
    )
    converter.register_structure_hook_func(_tagged_union, _by_tag(converter))
    converter.register_structure_hook(UploadPlan, _upload_plan(converter))
    converter.register_unstructure_hook_func(lambda _: True, CONVERTER.unstructure)
    return converter


TOLERANT = make_tolerant_converter()
