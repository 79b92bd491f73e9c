"""Batch presigning (contract 14): the uploads of many artifacts of a run, or the downloads
of many artifacts, in one request and one unit of work.

Each item is decided as if it were asked alone (``upload-url``, ``download-url``), in the
same order of checks; one refused item refuses the whole request, and nothing is announced.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import (
    PRESIGNED_URL_LIFETIME,
    Artifact,
    ArtifactState,
    check_sha256,
    check_size,
    clean_artifact_name,
)
from strongroom.domain.billing import GatedOperation, ensure_allowed
from strongroom.domain.errors import InvalidRequestError, InvalidStateError
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource, ensure_room
from strongroom.ports.driven.storage import PresignedRequest
from strongroom.ports.driving.access import Access, Grant
from strongroom.ports.driving.artifacts import (
    DOWNLOAD_ARTIFACT,
    REQUEST_UPLOAD,
    Artifacts,
    UploadPlan,
)
from strongroom.ports.driving.concurrency import STORAGE_CONCURRENCY, bounded
from strongroom.ports.driving.dependencies import Dependencies

# The most items one batch request takes.
MAX_BATCH = 1000

# One upload asked for: name, size, sha256.
Announcement = tuple[str, int, str]


@attrs.frozen
class PresignedDownload:
    """One artifact's presigned GET in a batch."""

    artifact_id: UUID
    request: PresignedRequest
    expires_at: datetime


def _check_count(count: int, what: str) -> None:
    if not 1 <= count <= MAX_BATCH:
        raise InvalidRequestError(f"{what} takes 1 to {MAX_BATCH} items")


def _check_same(known: Artifact, size: int, sha256: str) -> None:
    """``upload-url``'s rule for a name announced already: same size and sha256, pending."""
    if (known.size, known.sha256) != (size, sha256):
        raise InvalidStateError(
            f"an artifact named {known.name!r} with another size or sha256 is already "
            "announced in this run"
        )
    if known.state is not ArtifactState.PENDING:
        raise InvalidStateError(f"artifact {known.name!r} of this run is {known.state}")


class Transfers:
    """Presigned uploads and downloads, many at once."""

    def __init__(self, deps: Dependencies, access: Access, artifacts: Artifacts) -> None:
        self._deps = deps
        self._access = access
        self._artifacts = artifacts

    async def upload_urls(
        self, caller: Caller | Grant, run_id: UUID, items: Sequence[Announcement]
    ) -> list[UploadPlan]:
        """``upload-url`` for each item, in the order asked; all or none announced."""
        caller, workspace_id = await self._access.resolve(caller, REQUEST_UPLOAD, target_id=run_id)
        _check_count(len(items), "artifacts")
        asked = [(clean_artifact_name(n), check_size(s), check_sha256(d)) for n, s, d in items]
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            run = await lookups.visible_run(
                caller, uow, workspace_id, await uow.runs.get(workspace_id, run_id)
            )
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            backup = await lookups.backup(uow, workspace_id, run.backup_id)
            ensure_allowed(workspace.billing_state, GatedOperation.UPLOAD)
            known = {a.name: a for a in await uow.artifacts.list_for_run(workspace_id, run_id)}
            new: dict[str, Announcement] = {}
            for name, size, sha256 in asked:
                if name not in known:
                    new.setdefault(name, (name, size, sha256))
            limit = workspace.limit(QuotaResource.STORAGE_BYTES)
            if new and limit:
                ensure_room(
                    QuotaResource.STORAGE_BYTES,
                    limit,
                    await uow.artifacts.storage_bytes(workspace_id, with_pending=True),
                    adding=sum(size for _, size, _ in new.values()),
                )
            run.ensure_open()
            for name, size, sha256 in asked:
                if name in known:
                    _check_same(known[name], size, sha256)
                elif new[name] != (name, size, sha256):
                    raise InvalidStateError(
                        f"the artifact {name!r} is asked twice with another size or sha256"
                    )
            for name, announced in new.items():
                known[name] = await self._artifacts.announce(
                    uow, caller, workspace, backup, run, announced, now
                )
            plans: dict[str, UploadPlan] = {}
            for name, _, _ in asked:
                if name not in plans:
                    artifact = known[name]
                    storage = self._artifacts.storage_for(artifact, backup)
                    plans[name] = await self._artifacts.plan_upload(uow, storage, artifact, now)
            await uow.commit()
        return [plans[name] for name, _, _ in asked]

    async def download_urls(
        self, caller: Caller | Grant, artifact_ids: Sequence[UUID]
    ) -> list[PresignedDownload]:
        """``download-url`` for each artifact, in the order asked: one not found refuses
        the whole request with 404, then the first one refused (deleted, customer storage,
        not confirmed) in the order asked."""
        caller, workspace_id = await self._access.resolve(caller, DOWNLOAD_ARTIFACT)
        _check_count(len(artifact_ids), "artifact_ids")
        async with self._deps.uow() as uow:
            found = await uow.artifacts.get_many(workspace_id, artifact_ids)
        artifacts = [lookups.existing(found.get(each), "artifact") for each in artifact_ids]
        for artifact in artifacts:
            artifact.ensure_downloadable()
        expires_at = self._deps.clock.now() + PRESIGNED_URL_LIFETIME
        storage = self._deps.storage
        requests = await bounded(
            (storage.presign_get(a.object_key, expires_at, filename=a.name) for a in artifacts),
            STORAGE_CONCURRENCY,
        )
        return [
            PresignedDownload(artifact.id, request, expires_at)
            for artifact, request in zip(artifacts, requests, strict=True)
        ]
