"""Restore an ``s3`` cloud artifact into a bucket (contract 11).

The artifact is a POSIX tar (PAX format) compressed as one zstd stream: per object a
regular file ``objects/<key relative to the source prefix>`` whose PAX record
``STRONGROOM.key`` holds the exact key, then ``manifest.json`` (``format``
``strongroom-s3/1``, ``objects: [{key, size, etag}]``, ``count``, ``bytes``). Everything is
streamed: the archive is read once, front to back, and each object goes to
``target.prefix + key`` as it comes (objects larger than one part as a multipart upload),
so memory stays at about one part whatever the archive's size. At the end the objects
written are held against the manifest; a truncated or damaged archive, or one that does
not match its manifest, fails the restore (objects written before stay in the target).

The endpoint is reached through the outbound policy (``strongroom.adapters.outbound``):
until the bucket answered, any failure is "the restore target could not be reached" (at
the budget's floor), afterwards a store's refusal is "the restore target refused the
restore"; never the store's own words. What is wrong with the archive is said plainly.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Mapping
from typing import IO, Any, cast

import zstandard
from minio import Minio
from minio.helpers import check_bucket_name

from strongroom.adapters.outbound.policy import Outbound, Stage, outbound_for
from strongroom.adapters.outbound.s3 import s3_client
from strongroom.adapters.resolver import Resolver
from strongroom.domain.artifacts import DEFAULT_PART_SIZE
from strongroom.domain.backups import S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.storage import ObjectReader

FORMAT = "strongroom-s3/1"
KEY_RECORD = "STRONGROOM.key"
OBJECTS = "objects/"
MANIFEST = "manifest.json"
# S3's smallest part (but the last); minio refuses less.
MIN_PART_SIZE = 5 * 1024 * 1024
# The manifest is read into memory: bound it (a million keys of 1 KiB fit).
MAX_MANIFEST = 1024**3


def target_client(
    target: S3Source,
    credentials: Mapping[str, str],
    policy: EndpointPolicy | Outbound,
    resolve: Resolver | None = None,
) -> Minio:
    """A client of the target's endpoint that connects only where the policy allows."""
    return s3_client(target.endpoint, credentials, outbound_for(policy, resolve))


def restore_s3(
    artifact: ObjectReader,
    target: S3Source,
    credentials: Mapping[str, str],
    policy: EndpointPolicy | Outbound,
    *,
    part_size: int = DEFAULT_PART_SIZE,
    resolve: Resolver | None = None,
) -> int:
    """Blocking: put every object of the archive ``artifact`` into ``target``; how many.
    ``RestoreFailedError`` with a fixed message (see the module documentation)."""
    try:
        check_bucket_name(target.bucket)
    except ValueError as error:  # the customer's own input, said back
        raise RestoreFailedError(f"the target is not valid: {error}") from None
    outbound = outbound_for(policy, resolve)
    with outbound.stage(Stage.RESTORE_TARGET, RestoreFailedError):
        client = target_client(target, credentials, outbound)
        _ensure_bucket(client, target.bucket)
    with outbound.stage(Stage.RESTORE_WRITE, RestoreFailedError, keep=(RestoreFailedError,)):
        return _restore(client, artifact, target, max(part_size, MIN_PART_SIZE))


def _ensure_bucket(client: Minio, bucket: str) -> None:
    """The target bucket, created when it does not exist yet (a restore into a new one)."""
    if not client.bucket_exists(bucket):
        client.make_bucket(bucket)


def _restore(client: Minio, artifact: ObjectReader, target: S3Source, part_size: int) -> int:
    written: list[tuple[str, int]] = []
    manifest: dict[str, Any] | None = None
    prefix = target.prefix or ""
    with zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], artifact)) as plain:
        try:
            archive = tarfile.open(fileobj=plain, mode="r|")  # noqa: SIM115 (closed below)
        except (tarfile.TarError, zstandard.ZstdError) as error:
            raise RestoreFailedError(f"the artifact is not a readable archive: {error}") from None
        try:
            for member in _members(archive):
                if manifest is not None:
                    raise RestoreFailedError(f"archive member after the manifest: {member.name}")
                if member.name == MANIFEST and KEY_RECORD not in member.pax_headers:
                    manifest = _read_manifest(archive, member)
                    continue
                key = member.pax_headers.get(KEY_RECORD)
                if key is None or not (member.isfile() or member.isdir()):
                    raise RestoreFailedError(f"unexpected archive member: {member.name}")
                size = member.size if member.isfile() else 0
                data = archive.extractfile(member) if size else None
                client.put_object(
                    target.bucket,
                    prefix + key,
                    cast(Any, data if data is not None else _Empty()),
                    length=size,
                    part_size=part_size,
                )
                written.append((key, size))
        except (tarfile.TarError, zstandard.ZstdError, EOFError) as error:
            raise RestoreFailedError(
                f"the archive is damaged or truncated after {len(written)} objects: {error}"
            ) from None
        finally:
            archive.close()
    if manifest is None:
        raise RestoreFailedError(
            f"the archive ends without its manifest after {len(written)} objects (truncated?)"
        )
    _check_manifest(manifest, written)
    return len(written)


def _members(archive: tarfile.TarFile) -> Any:
    """The archive's members in order, read as they come."""
    while True:
        member = archive.next()
        if member is None:
            return
        yield member


class _Empty:
    """The data of an empty object."""

    def read(self, size: int = -1) -> bytes:
        return b""


def _read_manifest(archive: tarfile.TarFile, member: tarfile.TarInfo) -> dict[str, Any]:
    if member.size > MAX_MANIFEST:
        raise RestoreFailedError("the archive's manifest is too large")
    handle = archive.extractfile(member)
    raw = handle.read() if handle is not None else b""
    if len(raw) != member.size:
        raise RestoreFailedError("the archive's manifest is truncated")
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise RestoreFailedError("the archive's manifest is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RestoreFailedError(f"the archive's manifest is not of format {FORMAT}")
    return manifest


def _check_manifest(manifest: Mapping[str, Any], written: list[tuple[str, int]]) -> None:
    """The objects written are exactly those the manifest lists, with their sizes."""
    listed = manifest.get("objects")
    if not isinstance(listed, list) or not all(
        isinstance(item, dict)
        and isinstance(item.get("key"), str)
        and type(item.get("size")) is int
        for item in listed
    ):
        raise RestoreFailedError("the archive's manifest has no valid object list")
    expected = [(item["key"], item["size"]) for item in listed]
    if manifest.get("count") != len(expected) or len(written) != len(expected):
        raise RestoreFailedError(
            f"the archive holds {len(written)} objects but its manifest lists "
            f"{manifest.get('count')}"
        )
    if sorted(written) != sorted(expected):
        missing = sorted(set(expected) - set(written))
        extra = sorted(set(written) - set(expected))
        first = (missing or extra)[0]
        raise RestoreFailedError(
            f"the archive does not match its manifest: object {first[0]!r} "
            f"({first[1]} bytes) {'is missing' if missing else 'is not listed'}"
        )
    total = sum(size for _, size in written)
    if manifest.get("bytes") != total:
        raise RestoreFailedError(
            f"the archive holds {total} bytes but its manifest says {manifest.get('bytes')}"
        )
