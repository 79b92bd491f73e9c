"""Strings and integers with a wire meaning of their own, and the strict hooks that read
every JSON scalar of a request (exact JSON types, then the value's own rules).

Each named scalar is checked when a body is structured and described once in the OpenAPI
document.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, NewType
from urllib.parse import urlsplit
from uuid import UUID

from strongroom.domain.buckets import BUCKET_RULE, is_bucket_name
from strongroom.domain.errors import shown_field

Name = NewType("Name", str)
RoleSlug = NewType("RoleSlug", str)
NonEmpty = NewType("NonEmpty", str)
Endpoint = NewType("Endpoint", str)
Bucket = NewType("Bucket", str)
Port = NewType("Port", int)
Email = NewType("Email", str)
Uri = NewType("Uri", str)

MAX_PORT = 65_535
# Domain parsers name the field in their messages; hooks pass this and the path replaces it.
FIELD = "{field}"

TIMESTAMP = "RFC 3339 timestamp in UTC with a `Z` suffix."
PRESIGNED = "Presigned; bound to this method and object."
ENDPOINT = (
    "An http(s) URL such as `https://host:port` (port 1..65535, IPv6 literals in brackets, "
    "no user part)."
)
SEEN = "Recorded at most once a minute."
SHA256_EXAMPLE = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


class FieldError(ValueError):
    """A refusal of ``field`` inside the value a hook structures (``source.type``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


def exactly(kind: type[Any], label: str) -> Callable[[Any, Any], Any]:
    """A hook taking values of exactly the JSON type ``kind`` (no ``bool`` for ``int``)."""

    def structure(value: Any, _type: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {label}")
        return value

    return structure


string = exactly(str, "a string")
boolean = exactly(bool, "a boolean")


def integer(value: Any, _type: Any) -> int:
    """An integer; a JSON number with an integral value is one (``10.0`` is ``10``,
    contract section 13), never a ``bool``."""
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is not int:
        raise TypeError("expected an integer")
    return value


def non_empty(value: Any, _type: Any) -> str:
    """A string that is not empty."""
    if not string(value, str):
        raise ValueError("must not be empty")
    return str(value)


def bucket(value: Any, _type: Any) -> str:
    """An S3 bucket name (``domain.buckets``)."""
    text: str = string(value, str)
    if not is_bucket_name(text):
        raise ValueError(BUCKET_RULE)
    return text


def port(value: Any, _type: Any) -> int:
    """A TCP port."""
    if not 1 <= integer(value, int) <= MAX_PORT:
        raise ValueError(f"must be between 1 and {MAX_PORT}")
    return int(value)


# The authority of an endpoint: a bracketed IPv6 literal or a name (or IPv4 address), then
# an optional numeric port; nothing else (no user part: credentials have their own field,
# and an endpoint is returned and audited).
_AUTHORITY = re.compile(r"(?:\[[^\[\]]+\]|[^\[\]@:]+)(?::[0-9]{1,5})?", re.ASCII)


def endpoint(value: Any, _type: Any) -> str:
    """An ``http``/``https`` URL with a host and, if any, a port of 1..65535, without a user
    part; anything else (a malformed IPv6 literal such as ``https://[::1`` included) is
    refused. Every endpoint a body names (sources, destinations) is checked here only."""
    text: str = string(value, str)
    refusal = ValueError("must be an http(s) URL such as https://host:port")
    if any(char.isspace() or not char.isprintable() for char in text):
        raise refusal
    try:
        # urlsplit refuses unbalanced or invalid IPv6 brackets, ``port`` a port that is
        # not a number in 0..65535; both raise ValueError.
        parts = urlsplit(text)
        number = parts.port
    except ValueError as error:
        raise refusal from error
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or not _AUTHORITY.fullmatch(parts.netloc)
        or (number is not None and not 1 <= number <= MAX_PORT)
    ):
        raise refusal
    return text


def string_enum(value: Any, enum: type[StrEnum]) -> StrEnum:
    """A member of ``enum``, by value."""
    try:
        return enum(string(value, str))
    except ValueError as error:
        raise ValueError(f"expected one of: {', '.join(enum)}") from error


def uuid(value: Any, _type: Any) -> UUID:
    """A UUID, from its string."""
    try:
        return UUID(exactly(str, "a UUID string")(value, str))
    except ValueError as error:
        raise ValueError("expected a UUID") from error


def string_list(value: Any, _type: Any) -> list[str]:
    """An array of strings."""
    if type(value) is not list or any(type(item) is not str for item in value):
        raise TypeError("expected an array of strings")
    return list(value)


def secrets(value: Any, _type: Any) -> dict[str, str]:
    """An object of strings (credentials); messages name keys, never values."""
    if not isinstance(value, dict):
        raise TypeError("expected an object of strings")
    for key, item in value.items():
        if type(item) is not str:
            raise FieldError(shown_field(key), "expected a string")
    return dict(value)
