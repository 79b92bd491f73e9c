"""Views: a model of the wire bound to the class it shows, and the options of its fields.

A model decorated ``@view_of(D)`` is how the class ``D`` (of the domain) appears on the
wire: it is presented field by field from a ``D`` (``get`` reads another attribute), and a
nested request value of type ``D`` is structured through it. Classes outside the domain
(a use case's answer, the identity provider's) are bound with ``bind`` by the adapter
that knows them, since this package imports only the domain.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import attrs

T = TypeVar("T")

VIEWS: dict[type, type] = {}


def bind(shown: type, model: type) -> None:
    """Present ``shown`` through ``model``."""
    VIEWS[shown] = model


def view_of(domain: type) -> Callable[[type[T]], type[T]]:
    """Register the decorated model as the wire shape of ``domain``."""

    def register(model: type[T]) -> type[T]:
        bind(domain, model)
        return model

    return register


def meta(description: str | None = None, **options: Any) -> dict[str, Any]:
    """The metadata of a model's field: its description and wire options: ``schema``
    (extra JSON Schema keywords), ``schema_type`` (the type the document shows),
    ``rename`` (the wire key), ``get`` (a dotted attribute path, or a function, read from
    the domain object instead of the field's own name), ``optional`` (absent when null)."""
    return {"description": description, **options}


def write_only(shown: Any = None, **schema: Any) -> dict[str, Any]:
    """The metadata of a secret a request sends and no answer returns: ``writeOnly``, shown
    in the document as ``shown`` when given, with more JSON Schema keywords."""
    options = {"schema_type": shown} if shown is not None else {}
    return meta(**options, schema={**schema, "writeOnly": True})


@cache
def field_docs(model: type) -> dict[str, str]:
    """The descriptions written as a string right below a field of ``model`` or of its
    bases (attribute docstrings, as pydantic's ``use_attribute_docstrings`` reads them);
    ``meta(description)`` says the same for a field that needs other options too."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not attrs.has(cls):
            continue
        source = inspect.cleandoc("\n" + inspect.getsource(cls))
        body = next(node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)).body
        for field, doc in itertools.pairwise(body):
            text = (
                doc.value.value
                if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                else None
            )
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(text, str)
            ):
                docs[field.target.id] = " ".join(text.split())
    return docs


def is_model(kind: Any) -> bool:
    """Whether ``kind`` is a model of this package (not a domain class)."""
    return attrs.has(kind) and getattr(kind, "__module__", "").startswith(__package__ + ".")
