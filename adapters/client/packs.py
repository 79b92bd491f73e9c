"""Sending bytes held in memory (a snapshot's packs, index, manifest, sealed key) to the
presigned URLs of an upload plan, and fetching byte ranges of stored artifacts.

Packs are a few tens of MiB: held whole while they go (the writer keeps at most a few in
flight), sent in one PUT or in the plan's parts. Transient failures (connection errors,
5xx) are retried with backoff; a 403 (URLs expired) asks for a new plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx2

from strongroom.client.uploads import (
    PART_ATTEMPTS,
    PLAN_ATTEMPTS,
    MultipartPlan,
    Plan,
    SinglePlan,
    UploadError,
    is_multipart,
)

RETRY_DELAY = 0.5


class _ExpiredError(Exception):
    """Storage answered 403: the presigned URLs expired."""


class FetchError(Exception):
    """Storage did not give the bytes asked for."""


class UrlExpiredError(FetchError):
    """Storage answered 403: the presigned download URL expired."""


def put_bytes(
    http: httpx2.Client,
    name: str,
    data: bytes,
    ask: Callable[[], Plan],
    plan: Plan | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> None:
    """Upload ``data`` following ``plan`` (or a plan from ``ask``); ask again on expiry."""
    for _ in range(PLAN_ATTEMPTS):
        current = plan if plan is not None else ask()
        plan = None
        try:
            if is_multipart(current):
                multipart: MultipartPlan = current  # type: ignore[assignment]
                stored = set(multipart.stored_parts)
                for part in multipart.parts:
                    if part.number in stored:
                        continue
                    start = (part.number - 1) * multipart.part_size
                    _put(http, part.url, data[start : start + part.size], {}, name)
                    if on_bytes is not None:
                        on_bytes(part.size)
            else:
                single: SinglePlan = current  # type: ignore[assignment]
                _put(http, single.url, data, dict(single.headers), name)
                if on_bytes is not None:
                    on_bytes(len(data))
        except _ExpiredError:
            continue
        return
    raise UploadError(f"{name}: storage kept refusing the upload URLs")


def _put(http: httpx2.Client, url: str, body: bytes, headers: dict[str, str], name: str) -> None:
    headers = {**headers, "Content-Length": str(len(body))}
    for attempt in range(1, PART_ATTEMPTS + 1):
        try:
            response = http.put(url, content=body, headers=headers)
        except httpx2.TransportError as error:
            if attempt == PART_ATTEMPTS:
                raise UploadError(f"{name}: storage unreachable: {error}") from error
        else:
            if response.status_code < 300:
                return
            if response.status_code == 403:
                raise _ExpiredError
            if response.status_code < 500 or attempt == PART_ATTEMPTS:
                raise UploadError(
                    f"{name}: storage refused the upload ({response.status_code}): "
                    f"{response.text[:300]}"
                )
        time.sleep(RETRY_DELAY * 2 ** (attempt - 1))


def get_range(http: httpx2.Client, url: str, offset: int | None, length: int | None) -> bytes:
    """The bytes of a presigned download (``length`` bytes from ``offset``, or all)."""
    headers = {}
    if offset is not None and length is not None:
        if length == 0:
            return b""
        headers["Range"] = f"bytes={offset}-{offset + length - 1}"
    for attempt in range(1, PART_ATTEMPTS + 1):
        try:
            response = http.get(url, headers=headers)
        except httpx2.TransportError as error:
            if attempt == PART_ATTEMPTS:
                raise FetchError(f"storage unreachable: {error}") from error
        else:
            if response.status_code == 206 or (response.status_code == 200 and not headers):
                return response.content
            if response.status_code == 200:  # a storage that ignores Range: cut it here
                start = offset or 0
                return response.content[start : start + (length or 0)]
            if response.status_code == 403:
                raise UrlExpiredError("the download URL expired")
            if response.status_code < 500 or attempt == PART_ATTEMPTS:
                raise FetchError(f"storage answered {response.status_code}: {response.text[:300]}")
        time.sleep(RETRY_DELAY * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
