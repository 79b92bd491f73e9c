"""The local-disk storage's parts that stand alone: a refused request, what a presigned
URL grants, and how disk failures and JSON files are read."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs

from strongroom.domain.errors import UpstreamUnavailableError


class StorageRefusalError(Exception):
    """A request to the storage endpoint that is refused (bad or expired signature, bad
    size or digest, a locked object). ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.frozen
class Grant:
    """What a verified presigned URL allows."""

    method: str
    key: str
    size: int | None
    sha256: str | None
    upload_id: str | None
    part: int | None
    filename: str | None = None


F = TypeVar("F", bound=Callable[..., Any])


def disk_errors(method: F) -> F:
    """The port's error for a disk that fails: ``UpstreamUnavailableError``."""

    @functools.wraps(method)
    def translated(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except OSError as error:
            raise UpstreamUnavailableError("object storage (local disk) failed") from error

    return cast(F, translated)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data
