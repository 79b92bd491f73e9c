"""The binding to the domain: every model presents through its projection, every domain
class with a view is presented and (nested in a request) structured through it, and the
unions tagged by ``type`` (sources, destinations) are told apart by their tag."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import attrs
import cattrs
from cattrs.strategies import configure_tagged_union

from strongroom.adapters.wire.converter import CONVERTER
from strongroom.adapters.wire.present import model_hook, present
from strongroom.adapters.wire.scalars import FieldError
from strongroom.adapters.wire.views import VIEWS, is_model
from strongroom.adapters.wire.views import bind as bind_view
from strongroom.domain.backups import (
    CustomerS3Destination,
    Destination,
    PostgresSource,
    S3Source,
    ServiceDestination,
    Source,
    UnsupportedSource,
)

SOURCES = S3Source | PostgresSource
DESTINATIONS = ServiceDestination | CustomerS3Destination


def tag(member: type) -> str:
    """The ``type`` a member of a tagged union carries."""
    return str(attrs.fields_dict(member)["type"].default)


def _structure_view(domain: type) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _type: Any) -> Any:
        model = VIEWS[domain]
        parsed: Any = CONVERTER.structure(value, model)
        return domain(**{field.name: getattr(parsed, field.name) for field in attrs.fields(model)})

    return structure


def tagged(
    converter: cattrs.Converter, union: Any, refusal: str, fallback: Callable[[str], Any] | None
) -> None:
    """A union tagged by ``type``: its members' views, the tag added on the way out and
    required on the way in; an unknown tag is ``fallback(tag)`` when given, else refused."""
    configure_tagged_union(union, converter, tag, "type")
    structure_tagged = converter.get_structure_hook(union)
    known = {tag(member) for member in get_args(union)}

    def structure(value: Any, _type: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("expected an object")
        if "type" not in value:
            raise FieldError("type", "missing")
        found = value["type"]
        if type(found) is not str:
            raise FieldError("type", "expected a string")
        if not found:
            raise FieldError("type", "must not be empty")
        if found not in known:
            if fallback is None:
                raise FieldError("type", refusal)
            return fallback(found)
        return structure_tagged(value, union)

    converter.register_structure_hook(union, structure)
    # Out by the value's own class: a domain object through its view, or a view itself
    # (a client's request).
    converter.register_unstructure_hook(union, converter.unstructure)


def _hook(domain: type) -> None:
    CONVERTER.register_unstructure_hook(domain, present)
    CONVERTER.register_structure_hook(domain, _structure_view(domain))


def bind(shown: type, model: type) -> None:
    """Present ``shown`` (a class outside the domain) through ``model``."""
    bind_view(shown, model)
    _hook(shown)


def configure() -> None:
    """Hooks for every model and registered view (called once, when the models exist)."""
    CONVERTER.register_unstructure_hook_factory(is_model, model_hook)
    for domain in VIEWS:
        _hook(domain)
    tagged(CONVERTER, SOURCES, "", UnsupportedSource)
    tagged(CONVERTER, DESTINATIONS, "expected service or customer_s3", None)
    CONVERTER.register_unstructure_hook(UnsupportedSource, lambda source: {"type": source.type})
    CONVERTER.register_structure_hook(Source, CONVERTER.get_structure_hook(SOURCES))
    assert Destination == DESTINATIONS
