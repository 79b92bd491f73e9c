"""The strict converter of the wire: request bodies structured into models (unknown keys
refused, no silent coercion), with the contract's messages when a body is refused.

Presenting (the other direction) is in ``present``; the hooks binding the domain's classes
to their views are set by ``binding`` once every model exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar, Union, get_args, get_origin
from uuid import UUID

import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError

from strongroom.adapters.wire.scalars import (
    FIELD,
    Bucket,
    Endpoint,
    FieldError,
    NonEmpty,
    Port,
    boolean,
    bucket,
    endpoint,
    integer,
    non_empty,
    port,
    secrets,
    string,
    string_enum,
    string_list,
    uuid,
)
from strongroom.domain import timestamps
from strongroom.domain.backups import Unset
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError, StrongroomError, UnknownFieldError
from strongroom.domain.machines import in_catalog_order
from strongroom.domain.permissions import Permission

T = TypeVar("T")

# The marks of a PATCH field that was not sent.
SENTINELS: tuple[type, ...] = (Unset,)


def _optional_field(union: Any) -> bool:
    return get_origin(union) in (Union, type(int | None)) and any(
        arg in SENTINELS for arg in get_args(union)
    )


def _structure_optional_field(converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """A PATCH field (``X | Unset``, ``UNSET`` when absent); ``null`` only where ``X``
    takes it (a schedule)."""

    def structure(value: Any, union: Any) -> Any:
        rest = [arg for arg in get_args(union) if arg not in SENTINELS]
        if value is None:
            if type(None) not in rest:
                raise ValueError("must not be null")
            return None
        rest = [arg for arg in rest if arg is not type(None)]
        target: Any = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
        return converter.structure(value, target)

    return structure


def _equal_to(generic: Any) -> Callable[[Any], bool]:
    return lambda candidate: bool(candidate == generic)


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` suffix (millisecond precision)."""
    return timestamps.format_timestamp(moment)


def make_converter() -> cattrs.Converter:
    """The converter of the wire: unknown keys refused, no silent type coercion."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    for scalar, hook in (
        (str, string),
        (int, integer),
        (bool, boolean),
        (NonEmpty, non_empty),
        (Endpoint, endpoint),
        (Bucket, bucket),
        (Port, port),
        (UUID, uuid),
    ):
        converter.register_structure_hook(scalar, hook)
    for generic, hook in (
        (Mapping[str, str], secrets),
        (list[str], string_list),
    ):
        converter.register_structure_hook_func(_equal_to(generic), hook)
    # StrEnum precedes str in an enum's MRO, so this hook wins over the one for str.
    converter.register_structure_hook(StrEnum, string_enum)
    converter.register_structure_hook(
        datetime, lambda value, _: timestamps.parse_timestamp(string(value, str), FIELD)
    )
    converter.register_structure_hook(
        Duration, lambda value, _: Duration.parse(string(value, str), FIELD)
    )
    converter.register_structure_hook_func(_optional_field, _structure_optional_field(converter))
    register_unstructure_hooks(converter)
    return converter


def _duration(value: Duration | str) -> str:
    # A client's text that is no duration stays text (``sources.Retention``).
    return value if isinstance(value, str) else value.isoformat()


def register_unstructure_hooks(converter: cattrs.Converter) -> None:
    """How the wire writes the scalars the domain holds."""
    # str, not .value: a client keeps an enum value it does not know as a plain string.
    converter.register_unstructure_hook(StrEnum, str)
    converter.register_unstructure_hook(datetime, timestamp)
    converter.register_unstructure_hook(UUID, str)
    converter.register_unstructure_hook(Duration, _duration)
    converter.register_unstructure_hook_func(
        lambda t: t == frozenset[Permission],
        lambda held: [p.value for p in in_catalog_order(held)],
    )


CONVERTER = make_converter()


def _leaves(
    error: BaseException, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, BaseException]]:
    if isinstance(error, ClassValidationError):
        noted, plain = error.group_exceptions()
        for exception, note in noted:
            yield from _leaves(exception, (*path, note.name))
        for exception in plain:
            yield from _leaves(exception, path)
    elif isinstance(error, IterableValidationError | BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner, path)
    else:
        if isinstance(error, FieldError):
            path = (*path, error.field)
        yield ".".join(path), error


def _refusal(error: Exception, cls: type) -> StrongroomError:
    leaves = list(_leaves(error))
    for path, leaf in leaves:
        if isinstance(leaf, ForbiddenExtraKeysError):
            notes: Mapping[str, str] = getattr(cls, "__unknown_notes__", {}) if not path else {}
            note = "".join(notes.get(name, "") for name in sorted(leaf.extra_fields))
            return UnknownFieldError(leaf.extra_fields, prefix=path and f"{path}.", note=note)
    path, leaf = leaves[0]
    if isinstance(leaf, StrongroomError):
        if FIELD in leaf.message:
            return InvalidRequestError(leaf.message.replace(FIELD, path))
        # A value's own message names it from its field on (``schedule.cron ...``); nested
        # deeper (``drill.schedule``), the field's parents go in front.
        parent, _, last = path.rpartition(".")
        named = leaf.message.startswith((f"{last}.", f"{last} "))
        if parent and named and isinstance(leaf, InvalidRequestError):
            return InvalidRequestError(f"{parent}.{leaf.message}")
        return leaf
    if isinstance(leaf, KeyError) or str(leaf) == "missing":
        return InvalidRequestError(f"missing field: {path}")
    return InvalidRequestError(f"invalid value for {path}: {leaf}" if path else str(leaf))


def structure(data: Mapping[str, Any], cls: type[T]) -> T:
    """Build ``cls`` from a parsed body, or refuse it with ``invalid_request``."""
    try:
        return CONVERTER.structure(data, cls)
    except StrongroomError:
        raise
    except (ClassValidationError, ValueError, TypeError) as error:
        raise _refusal(error, cls) from error
