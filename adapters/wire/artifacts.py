"""Artifacts: announcing an upload, its plan, downloads and the artifact itself."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import PRESIGNED, SHA256_EXAMPLE, Uri
from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.artifacts import (
    MAX_ARTIFACT_NAME,
    MAX_ARTIFACT_SIZE,
    ArtifactState,
    ArtifactStorage,
    Verification,
)
from strongroom.domain.artifacts import Artifact as DomainArtifact


@attrs.frozen
class UploadRequest:
    """`POST /v1/runs/{run_id}/upload-url`."""

    name: str = attrs.field(
        metadata=meta(
            f"1 to {MAX_ARTIFACT_NAME} characters, no control characters; unique in the run "
            "(asking again for the same name, size and sha256 resumes).",
            schema={
                "minLength": 1,
                "maxLength": MAX_ARTIFACT_NAME,
                "pattern": "^[^\\x00-\\x1f\\x7f]*$",
            },
        )
    )
    size: int = attrs.field(metadata=meta(schema={"minimum": 0, "maximum": MAX_ARTIFACT_SIZE}))
    """Exact size in bytes."""
    sha256: str = attrs.field(
        metadata=meta(schema={"pattern": "^[0-9a-fA-F]{64}$", "examples": [SHA256_EXAMPLE]})
    )
    """Hex digest of the bytes."""


@attrs.frozen
class SingleUpload:
    """Below the multipart threshold: one PUT of the whole body."""

    artifact_id: UUID = attrs.field(metadata=meta(get="artifact.id"))
    method: Literal["PUT"] = attrs.field(metadata=meta(get="request.method"))
    url: Uri = attrs.field(metadata=meta(PRESIGNED))
    headers: dict[str, str] = attrs.field(metadata=meta(get="request.headers"))
    """Headers to send with the PUT."""
    expires_at: datetime


@attrs.frozen
class UploadPart:
    """One part's presigned PUT."""

    number: int = attrs.field(metadata=meta(schema={"minimum": 1}))
    size: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    method: Literal["PUT"] = attrs.field(metadata=meta(get="request.method"))
    url: Uri


@attrs.frozen
class MultipartUpload:
    """From the multipart threshold up: one PUT per part; `confirm` joins them."""

    artifact_id: UUID = attrs.field(metadata=meta(get="artifact.id"))
    upload_id: str = attrs.field(metadata=meta(get="artifact.upload_id"))
    part_size: int = attrs.field(metadata=meta(schema={"minimum": 1}))
    parts: list[UploadPart]
    stored_parts: list[int]
    """Parts already stored: a resuming client skips them."""
    expires_at: datetime


UploadPlan = SingleUpload | MultipartUpload


@attrs.frozen
class Download:
    """A presigned download."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    method: Literal["GET"]
    url: Uri = attrs.field(metadata=meta(PRESIGNED))
    expires_at: datetime


# The most items one batch request takes (``ports.driving.transfers.MAX_BATCH``).
_BATCH = {"minItems": 1, "maxItems": 1000}


@attrs.frozen
class UploadsRequest:
    """`POST /v1/runs/{run_id}/upload-urls`: many `upload-url` requests of one run."""

    artifacts: list[UploadRequest] = attrs.field(
        metadata=meta("1 to 1000 artifacts, each as `upload-url` takes it.", schema=_BATCH)
    )


@attrs.frozen
class UploadPlans:
    """What `upload-url` answers for each artifact, in the order asked."""

    data: list[SingleUpload | MultipartUpload]


@attrs.frozen
class DownloadsRequest:
    """`POST /v1/artifacts/download-urls`: many `download-url` requests."""

    artifact_ids: list[UUID] = attrs.field(metadata=meta("1 to 1000 artifact ids.", schema=_BATCH))


@attrs.frozen
class BatchDownload:
    """One artifact's presigned download."""

    artifact_id: UUID
    method: Literal["GET"] = attrs.field(metadata=meta(get="request.method"))
    url: Uri = attrs.field(metadata=meta(PRESIGNED))
    expires_at: datetime


@attrs.frozen
class Downloads:
    """A presigned download of each artifact, in the order asked."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    data: list[BatchDownload]


@view_of(DomainArtifact)
@attrs.frozen
class Artifact:
    """A file of a run."""

    id: UUID
    run_id: UUID
    backup_id: UUID
    name: str
    size: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    sha256: str = attrs.field(
        metadata=meta(schema={"pattern": "^[0-9a-f]{64}$", "examples": [SHA256_EXAMPLE]})
    )
    state: ArtifactState
    storage: ArtifactStorage
    created_at: datetime
    expires_at: datetime | None
    """From the backup's retention at confirmation."""
    locked_until: datetime | None
    """Nobody can remove it before (enforced by the storage itself)."""
    verification: Verification | None
    """What the last re-read of its bytes found: `pending` until a multipart upload is verified in
    the background, `ok`, `mismatch` or `missing`; null if never."""
    verified_at: datetime | None
    """When it was last verified."""
    held: bool
    """Under a legal hold: never deleted or expired until released."""
