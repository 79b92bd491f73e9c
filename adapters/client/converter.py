"""One cattrs converter between the wire's JSON and the client's attrs models.

Structuring ignores unknown fields (a newer server adds fields without breaking this
client); unions the wire tells apart by a ``type`` field (sources, destinations) or by
shape (upload plans) get explicit hooks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import attrs
import cattrs

from strongroom.client import models


def _datetime(value: Any, _: type) -> datetime:
    return datetime.fromisoformat(str(value))


def _by_type(made: cattrs.Converter, *classes: type, optional: bool = False) -> Any:
    """A hook choosing among ``classes`` by the value's ``type`` field."""
    by_name = {attrs.fields_dict(cls)["type"].default: cls for cls in classes}

    def structure(value: Any, _: Any) -> Any:
        if value is None and optional:
            return None
        cls = by_name.get(value.get("type")) if isinstance(value, dict) else None
        if cls is None:
            raise ValueError(f"unknown type {value!r}")
        return made.structure(value, cls)

    return structure


def _upload_plan(made: cattrs.Converter) -> Any:
    """A hook telling a multipart plan (it has ``parts``) from a single upload."""

    def structure(value: Any, _: Any) -> models.UploadPlan:
        if isinstance(value, dict) and "parts" in value:
            return made.structure(value, models.MultipartUpload)
        return made.structure(value, models.SingleUpload)

    return structure


def make_converter() -> cattrs.Converter:
    """A converter for the client's models: ISO timestamps, UUIDs, tagged unions."""
    made = cattrs.Converter()
    made.register_structure_hook(datetime, _datetime)
    made.register_unstructure_hook(datetime, lambda value: value.isoformat().replace("+00:00", "Z"))
    made.register_structure_hook(UUID, lambda value, _: UUID(str(value)))
    made.register_unstructure_hook(UUID, str)
    sources = (models.S3Source, models.PostgresSource)
    made.register_structure_hook(models.Source, _by_type(made, *sources))
    made.register_structure_hook(models.Source | None, _by_type(made, *sources, optional=True))
    destinations = (models.ServiceDestination, models.CustomerS3Destination)
    made.register_structure_hook(models.Destination, _by_type(made, *destinations))
    made.register_structure_hook(models.UploadPlan, _upload_plan(made))
    return made


converter = make_converter()


def unstructure(value: Any) -> Any:
    """``value`` as JSON-ready data: attrs models become dicts (``None`` fields kept)."""
    return converter.unstructure(value)
