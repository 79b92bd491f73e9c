"""Strict parsing of JSON request bodies: content type, JSON, unknown fields, exact types.

Every failure is ``invalid_request`` (400) naming what is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from strongroom.domain import timestamps
from strongroom.domain.errors import InvalidRequestError, UnknownFieldError, shown_field

T = TypeVar("T")


@attrs.frozen
class EmptyBody:
    """The body of an action that takes no fields: absent, or ``{}``."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidRequestError(f"duplicate field {shown_field(key)!r} in body")
        result[key] = value
    return result


def is_json_content_type(content_type: str | None) -> bool:
    """``application/json``, optionally with a UTF-8 charset parameter."""
    if content_type is None:
        return False
    media_type, _, params = content_type.partition(";")
    if media_type.strip().lower() != "application/json":
        return False
    params = params.strip().lower().replace(" ", "")
    return params in ("", "charset=utf-8", 'charset="utf-8"')


def parse_json_object(body: bytes, content_type: str | None, *, optional: bool) -> dict[str, Any]:
    """The body as a JSON object; an absent body is ``{}`` where the body is optional."""
    if not body:
        if optional:
            return {}
        raise InvalidRequestError("a JSON body is required")
    if not is_json_content_type(content_type):
        raise InvalidRequestError("Content-Type must be application/json")
    try:
        value = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise InvalidRequestError("body is not valid JSON") from error
    if not isinstance(value, dict):
        raise InvalidRequestError("body must be a JSON object")
    try:
        # JSON escapes can spell lone surrogates ("\ud800"), which no UTF-8 store or
        # response can hold: refuse them here rather than fail after storing.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidRequestError("body contains text that is not valid Unicode") from error
    return value


def _strict(kind: type[Any], label: str) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {label}")
        return value

    return structure


def _string_enum(value: Any, enum: type[StrEnum]) -> StrEnum:
    if type(value) is not str:
        raise TypeError("expected a string")
    try:
        return enum(value)
    except ValueError as error:
        allowed = ", ".join(member.value for member in enum)
        raise ValueError(f"expected one of: {allowed}") from error


def _uuid(value: Any, _type: Any) -> UUID:
    if not isinstance(value, str):
        raise TypeError("expected a UUID string")
    try:
        return UUID(value)
    except ValueError as error:
        raise ValueError("expected a UUID") from error


def _string_list(value: Any, _type: Any) -> list[str]:
    if type(value) is not list or any(type(item) is not str for item in value):
        raise TypeError("expected an array of strings")
    return list(value)


def make_converter() -> cattrs.Converter:
    """The converter of request bodies: unknown keys refused, no silent type coercion."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    # StrEnum precedes str in an enum's MRO, so this hook wins over the one for str.
    converter.register_structure_hook(StrEnum, _string_enum)
    converter.register_structure_hook(UUID, _uuid)
    converter.register_structure_hook_func(lambda t: t == list[str], _string_list)
    return converter


_CONVERTER = make_converter()
_PATH_PATTERN = re.compile(r" @ \$\.?(.*)$")


def _describe(error: ClassValidationError) -> str:
    messages = cattrs.transform_error(error)
    first = messages[0] if messages else "body does not match the expected shape"
    match = _PATH_PATTERN.search(first)
    field = match.group(1) if match else ""
    reason = _PATH_PATTERN.sub("", first)
    if reason.startswith("required field missing"):
        return f"missing field: {field}"
    return f"invalid value for {field}: {reason}" if field else reason


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def structure(data: Mapping[str, Any], cls: type[T]) -> T:
    """Build ``cls`` from a parsed body, or refuse it with ``invalid_request``."""
    try:
        return _CONVERTER.structure(data, cls)
    except ClassValidationError as error:
        for leaf in _leaves(error):
            if isinstance(leaf, ForbiddenExtraKeysError):
                raise UnknownFieldError(leaf.extra_fields) from error
        raise InvalidRequestError(_describe(error)) from error
    except (ValueError, TypeError) as error:
        raise InvalidRequestError(str(error)) from error


# The authority of an endpoint: a bracketed IPv6 literal or a name (or IPv4 address), then
# an optional numeric port; nothing else (no user part: credentials have their own field,
# and an endpoint is returned and audited).
_AUTHORITY = re.compile(r"(?:\[[^\[\]]+\]|[^\[\]@:]+)(?::[0-9]{1,5})?", re.ASCII)
MAX_PORT = 65_535


def require_url(value: Any, field: str) -> str:
    """An ``http``/``https`` URL with a host and, if any, a port of 1..65535, without a user
    part; anything else (a malformed IPv6 literal such as ``https://[::1`` included) is
    ``invalid_request``.

    Every endpoint a body names (sources, destinations) is checked here, and only here.
    """
    if not isinstance(value, str):
        raise InvalidRequestError(f"{field} must be a string")
    refusal = InvalidRequestError(f"{field} must be an http(s) URL such as https://host:port")
    if any(char.isspace() or not char.isprintable() for char in value):
        raise refusal
    try:
        # urlsplit refuses unbalanced or invalid IPv6 brackets, ``port`` a port that is
        # not a number in 0..65535; both raise ValueError.
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise refusal from error
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or not _AUTHORITY.fullmatch(parts.netloc)
        or (port is not None and not 1 <= port <= MAX_PORT)
    ):
        raise refusal
    return value


def parse_timestamp(value: str, field: str) -> datetime:
    """An RFC 3339 timestamp with a time zone, in UTC, or ``invalid_request`` (out of range
    included): the domain's one parser of client timestamps, which every path uses."""
    return timestamps.parse_timestamp(value, field)
