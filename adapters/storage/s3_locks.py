"""What an S3 store says of an object's lock (immutability proofs, contract 16): the
version a download serves (the locked one, else the current), its retention
(GetObjectRetention) and its legal hold (GetObjectLegalHold), asked of the store itself."""

from __future__ import annotations

from datetime import UTC

from minio import Minio
from minio.error import S3Error

from strongroom.domain.proofs import StorageLock

_GONE = {"NoSuchKey", "NoSuchVersion"}
# How stores say a version has no retention or hold (SeaweedFS uses the second).
_NONE = {
    "NoSuchObjectLockConfiguration",
    "ObjectLockConfigurationNotFoundError",
    "NoSuchObjectLegalHold",
}


def lock_status(client: Minio, bucket: str, key: str, locked_version: str | None) -> StorageLock:
    """Blocking: the store's report of ``key`` (``locked_version``: the newest version
    under a COMPLIANCE retention, if any); all None for an object it does not have."""
    version = locked_version
    if version is None:
        try:
            version = client.stat_object(bucket, key).version_id
        except S3Error as error:
            if error.code in _GONE:
                return StorageLock()
            raise
    try:
        retention = client.get_object_retention(bucket, key, version_id=version)
    except S3Error as error:
        if error.code not in _NONE:
            raise
        retention = None
    try:
        hold: bool | None = bool(client.is_object_legal_hold_enabled(bucket, key, version))
    except S3Error as error:
        if error.code not in _NONE:
            raise
        hold = False
    until = None if retention is None else retention.retain_until_date
    return StorageLock(
        version_id=version,
        mode=None if retention is None else retention.mode,
        retain_until=None if until is None else until.astimezone(UTC),
        legal_hold=hold,
    )
