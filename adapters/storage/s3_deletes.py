"""Removing many objects of an S3 store at once (a retention chunk, a namespace): every
version of each, the versions listed a few keys at a time, then DeleteObjects for up to
1 000 versions a request. Blocking: the adapter runs these in a worker thread."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from minio import Minio
from minio.deleteobjects import DeleteObject

from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.ports.driven.storage import ObjectLockedError

# How a store refuses to remove (or shorten the retention of) a locked or held version.
LOCK_REFUSALS = {"AccessDenied", "ObjectLocked", "InvalidRequest"}
_GONE = {"NoSuchKey", "NoSuchVersion"}
# DeleteObjects takes at most this many versions a request (S3's limit).
PER_REQUEST = 1000
# Keys whose versions are listed at once (one request each).
LISTINGS = 16

Translated = Callable[..., contextlib.AbstractContextManager[None]]
Version = tuple[str, str | None]


def delete_many(
    client: Minio, bucket: str, keys: Sequence[str], translated: Translated
) -> dict[str, Exception]:
    """Remove every version of each key; the keys kept, each with why (``translated``:
    the adapter's translation of minio errors to port errors)."""
    kept: dict[str, Exception] = {}

    def versions_of(key: str) -> list[Version]:
        try:
            with translated("list object versions"):
                listed = client.list_objects(bucket, prefix=key, include_version=True)
                return [(key, item.version_id) for item in listed if item.object_name == key]
        except UpstreamUnavailableError as error:
            kept[key] = error
            return []

    with ThreadPoolExecutor(max_workers=LISTINGS) as pool:
        versions = [version for found in pool.map(versions_of, keys) for version in found]
    return {**delete_versions(client, bucket, versions, translated), **kept}


def delete_versions(
    client: Minio, bucket: str, versions: Sequence[Version], translated: Translated
) -> dict[str, Exception]:
    """Remove these versions, ``PER_REQUEST`` a request; the keys of those kept, with why
    (a version already gone is removed)."""
    kept: dict[str, Exception] = {}
    for start in range(0, len(versions), PER_REQUEST):
        batch = versions[start : start + PER_REQUEST]
        try:
            with translated("delete objects", may_lock=True):
                errors = list(client.remove_objects(bucket, [DeleteObject(k, v) for k, v in batch]))
        except (ObjectLockedError, UpstreamUnavailableError) as error:
            kept.update((key, error) for key, _ in batch)
            continue
        for failure in errors:
            if failure.code in _GONE:
                continue
            if failure.code in LOCK_REFUSALS:
                refusal: Exception = ObjectLockedError(f"storage refused: {failure.code}")
            else:
                refusal = UpstreamUnavailableError(f"storage failed to delete: {failure.code}")
            kept.setdefault(str(failure.name), refusal)
    return kept
