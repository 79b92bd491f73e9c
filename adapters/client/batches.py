"""The answers of the batch operations of snapshots (many presigned URLs in one request)
and the backup's ``encryption``, read tolerantly: a server that does not know them yet
leaves them out, and this client reads what is there."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from strongroom.adapters.wire.artifacts import UploadPlan, UploadRequest

# One artifact of ``POST /v1/runs/{run_id}/upload-urls``: as ``upload-url`` takes it.
UploadItem = UploadRequest


@attrs.frozen
class UploadPlans:
    """``upload-urls``: one plan per artifact asked for, in the order asked."""

    data: list[UploadPlan]


@attrs.frozen
class DownloadUrl:
    """One presigned download of ``download-urls``."""

    artifact_id: UUID
    method: str
    url: str
    expires_at: datetime


@attrs.frozen
class DownloadUrls:
    """``POST /v1/artifacts/download-urls``: one URL per artifact, in the order asked."""

    data: list[DownloadUrl]


@attrs.frozen
class Encryption:
    """A snapshot backup's ``encryption``: the age recipients its snapshots are sealed to."""

    recipients: list[str]


def backup_encryption(raw: Any) -> Encryption | None:
    """``encryption`` of a backup as the API wrote it (a dict), or of a model that has it."""
    value = raw.get("encryption") if isinstance(raw, dict) else getattr(raw, "encryption", None)
    if value is None:
        return None
    recipients = value.get("recipients") if isinstance(value, dict) else value.recipients
    return Encryption([str(r) for r in recipients or ()])


def backup_format(raw: Any) -> str:
    """``format`` of a backup (``archive`` when the server does not say)."""
    value = raw.get("format") if isinstance(raw, dict) else getattr(raw, "format", None)
    if value is None:
        return "snapshot" if backup_encryption(raw) is not None else "archive"
    return str(getattr(value, "value", value))
