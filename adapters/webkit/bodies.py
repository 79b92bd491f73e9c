"""The strict parsing of JSON request bodies: media type, duplicate keys, constants that
are not JSON, text that is not Unicode."""

from __future__ import annotations

import json
from typing import Any

from strongroom.domain.errors import InvalidRequestError, shown_field

Json = dict[str, Any]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidRequestError(f"duplicate field {shown_field(key)!r} in body")
        result[key] = value
    return result


def is_media_type(content_type: str | None, expected: str) -> bool:
    """``content_type`` is ``expected``, optionally with a UTF-8 charset parameter."""
    media_type, _, params = (content_type or "").partition(";")
    params = params.strip().lower().replace(" ", "")
    return media_type.strip().lower() == expected and params in (
        "",
        "charset=utf-8",
        'charset="utf-8"',
    )


def parse_json_object(body: bytes, content_type: str | None, *, optional: bool) -> Json:
    """The body as a JSON object; an absent body is ``{}`` where the body is optional."""
    if not body:
        if optional:
            return {}
        raise InvalidRequestError("a JSON body is required")
    if not is_media_type(content_type, "application/json"):
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
        # response can hold: refuse them here rather than fail after storing. Only an
        # escape can (the text decoded as UTF-8), so a body without one is not checked.
        if b"\\u" in body:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidRequestError("body contains text that is not valid Unicode") from error
    return value
