"""Artifact use cases: upload URLs, confirmation, list, download URLs, delete.

Bytes never pass through here: the use cases ask storage for presigned requests and then
check what arrived. Storage is called inside the unit of work and before its commit, so a
storage failure (502) leaves no record changed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import (
    PRESIGNED_URL_LIFETIME,
    Artifact,
    ArtifactState,
    ArtifactStorage,
    PartPlan,
    check_sha256,
    check_size,
    clean_artifact_name,
)
from strongroom.domain.audit import Change
from strongroom.domain.backups import Backup, CustomerS3Destination
from strongroom.domain.billing import GatedOperation, ensure_allowed
from strongroom.domain.errors import (
    ArtifactLockedError,
    ArtifactMissingError,
    InvalidStateError,
)
from strongroom.domain.events import changed, created
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource, ensure_room
from strongroom.domain.references import (
    check_references,
    live_referrers,
    run_lock,
    to_extend,
)
from strongroom.domain.runs import Run
from strongroom.domain.workspaces import Workspace
from strongroom.ports.driven.storage import ObjectLockedError, ObjectStorage, PresignedRequest
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import changing
from strongroom.ports.driving.concurrency import STORAGE_CONCURRENCY, bounded
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify_run
from strongroom.ports.driving.recording import by_caller

REQUEST_UPLOAD = Requirement((Permission.ARTIFACTS_UPLOAD,), "artifact.create")
CONFIRM_RUN = Requirement((Permission.ARTIFACTS_CONFIRM,), "run.confirm")
LIST_ARTIFACTS = Requirement((Permission.ARTIFACTS_READ,))
DOWNLOAD_ARTIFACT = Requirement((Permission.ARTIFACTS_DOWNLOAD,))
DELETE_ARTIFACT = Requirement((Permission.ARTIFACTS_DELETE,), "artifact.delete")
VERIFY_ARTIFACT = Requirement((Permission.ARTIFACTS_READ,), "artifact.verify")


@attrs.frozen
class PresignedPart:
    """The presigned upload of one part of a multipart upload."""

    number: int
    size: int
    request: PresignedRequest


@attrs.frozen
class UploadPlan:
    """What ``upload-url`` answers: one presigned PUT, or the parts of a multipart upload
    with the numbers of those already stored (a client resumes by sending the others)."""

    artifact: Artifact
    expires_at: datetime
    request: PresignedRequest | None = None
    part_size: int | None = None
    parts: tuple[PresignedPart, ...] = ()
    stored_parts: tuple[int, ...] = ()


class Artifacts:
    """Artifact use cases; every look-up is scoped to the caller's workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    # ----------------------------------------------------------------------------------
    # Upload

    async def upload_url(
        self, caller: Caller | Grant, run_id: UUID, name: str, size: int, sha256: str
    ) -> UploadPlan:
        """Announce an artifact of a run and presign its upload.

        Asking again for the same name (same size and sha256) gives the same artifact and
        fresh URLs; for a multipart upload, the parts already stored are listed.
        """
        caller, workspace_id = await self._access.resolve(caller, REQUEST_UPLOAD, target_id=run_id)
        name, size, sha256 = clean_artifact_name(name), check_size(size), check_sha256(sha256)
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            run = await lookups.uploadable_run(
                caller, uow, workspace_id, await uow.runs.get(workspace_id, run_id)
            )
            workspace = await lookups.workspace(uow, workspace_id, for_update=True)
            backup = await lookups.backup(uow, workspace_id, run.backup_id)
            ensure_allowed(workspace.billing_state, GatedOperation.UPLOAD)
            artifact = await uow.artifacts.find_in_run(workspace_id, run_id, name)
            limit = workspace.limit(QuotaResource.STORAGE_BYTES)
            # The usage sums every artifact of the workspace: only a set limit needs it.
            if artifact is None and limit:
                ensure_room(
                    QuotaResource.STORAGE_BYTES,
                    limit,
                    await uow.artifacts.storage_bytes(workspace_id, with_pending=True),
                    adding=size,
                )
            run.ensure_open()
            if artifact is None:
                artifact = await self.announce(
                    uow, caller, workspace, backup, run, (name, size, sha256), now
                )
            elif (artifact.size, artifact.sha256) != (size, sha256):
                raise InvalidStateError(
                    f"an artifact named {name!r} with another size or sha256 is already "
                    "announced in this run"
                )
            elif artifact.state is not ArtifactState.PENDING:
                raise InvalidStateError(f"artifact {name!r} of this run is {artifact.state}")
            plan = await self.plan_upload(uow, self.storage_for(artifact, backup), artifact, now)
            await uow.commit()
        return plan

    def storage_for(self, artifact: Artifact, backup: Backup) -> ObjectStorage:
        """The service's storage, or the customer's bucket the artifact goes to."""
        if artifact.storage is ArtifactStorage.SERVICE:
            return self._deps.storage
        destination = backup.destination
        sealed = backup.sealed_destination_credentials
        if not isinstance(destination, CustomerS3Destination) or sealed is None:
            raise InvalidStateError(
                "the backup's destination changed: the customer bucket of this artifact is "
                "no longer configured"
            )
        return self._deps.customer_storage(destination, self._deps.secrets.open(sealed))

    async def announce(
        self,
        uow: UnitOfWork,
        caller: Caller,
        workspace: Workspace,
        backup: Backup,
        run: Run,
        announced: tuple[str, int, str],
        now: datetime,
    ) -> Artifact:
        """Record (and audit) a new ``pending`` artifact of ``run``; from the multipart
        threshold up, its multipart upload begun."""
        size = announced[1]
        artifact = self.new_record(workspace, backup, run, announced, now)
        key = artifact.object_key
        if size >= self._deps.multipart_threshold:
            upload_id = await self.storage_for(artifact, backup).start_multipart(key)
            artifact = attrs.evolve(artifact, upload_id=upload_id)
        await uow.artifacts.add(artifact)
        uow.collect(
            by_caller(self._deps, caller, workspace.id, created("artifact.create", artifact))
        )
        return artifact

    def new_record(
        self,
        workspace: Workspace,
        backup: Backup,
        run: Run,
        announced: tuple[str, int, str],
        now: datetime,
    ) -> Artifact:
        """A new ``pending`` artifact of ``run`` (name, size, sha256), with its object key
        in the service's namespace of the workspace or below the customer bucket's prefix."""
        name, size, sha256 = announced
        artifact_id = self._deps.ids.new_id()
        tail = f"{run.backup_id}/{run.id}/{artifact_id}"
        where = ArtifactStorage.SERVICE
        key = f"{workspace.storage_namespace}/{tail}"
        if isinstance(backup.destination, CustomerS3Destination):
            where = ArtifactStorage.CUSTOMER
            prefix = (backup.destination.prefix or "").strip("/")
            key = f"{prefix}/{tail}" if prefix else tail
        return Artifact(
            id=artifact_id,
            workspace_id=workspace.id,
            backup_id=run.backup_id,
            run_id=run.id,
            name=name,
            size=size,
            sha256=sha256,
            state=ArtifactState.PENDING,
            storage=where,
            object_key=key,
            created_at=now,
        )

    async def plan_upload(
        self, uow: UnitOfWork, storage: ObjectStorage, artifact: Artifact, now: datetime
    ) -> UploadPlan:
        """Presign the upload of a pending artifact: one PUT, or its parts (a stale
        multipart upload begun again)."""
        expires_at = now + PRESIGNED_URL_LIFETIME
        if artifact.upload_id is None:
            request = storage.presign_put(
                artifact.object_key, artifact.size, artifact.sha256, expires_at
            )
            return UploadPlan(artifact, expires_at, request=request)
        stored = await storage.list_parts(artifact.object_key, artifact.upload_id)
        if stored is None:  # the upload was aborted (stale): begin again
            artifact = attrs.evolve(
                artifact, upload_id=await storage.start_multipart(artifact.object_key)
            )
            await uow.artifacts.update(artifact)
            stored = []
        assert artifact.upload_id is not None
        plan = PartPlan.for_size(artifact.size)
        parts = tuple(
            PresignedPart(
                number,
                plan.part_length(number),
                storage.presign_part(
                    artifact.object_key,
                    artifact.upload_id,
                    number,
                    plan.part_length(number),
                    expires_at,
                ),
            )
            for number in range(1, plan.count + 1)
        )
        complete = tuple(
            sorted(
                part.number
                for part in stored
                if 1 <= part.number <= plan.count and part.size == plan.part_length(part.number)
            )
        )
        return UploadPlan(
            artifact, expires_at, part_size=plan.part_size, parts=parts, stored_parts=complete
        )

    # ----------------------------------------------------------------------------------
    # Confirm

    async def confirm(
        self, caller: Caller | Grant, run_id: UUID, references: Sequence[UUID] = ()
    ) -> Run:
        """Check every announced artifact in storage; all become ``available`` and the run
        ``succeeded``, or nothing changes (409 ``artifact_missing``).

        ``references``: artifacts of earlier runs of the same backup that the run's snapshot
        uses (``domain.references.check_references``); each takes at least the run's lock,
        in the record and in storage, and the references are recorded."""
        caller, workspace_id = await self._access.resolve(caller, CONFIRM_RUN, target_id=run_id)
        now = self._deps.clock.now()
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            run = await lookups.uploadable_run(
                caller, uow, workspace_id, await uow.runs.get(workspace_id, run_id, for_update=True)
            )
            await change.gate(GatedOperation.UPLOAD, lock=False)
            run.ensure_open()
            referenced: tuple[Artifact, ...] = ()
            if references:
                found = await uow.artifacts.get_many(workspace_id, references)
                referenced = check_references(run.id, run.backup_id, references, found)
            finished = await self.confirm_pending(uow, run, now)
            recorded = run.recorded_confirmation(finished)
            if referenced:
                await self._keep_referenced(uow, run, referenced, now)
                counted = {"references": Change(None, len(referenced))}
                recorded = attrs.evolve(recorded, changes={**(recorded.changes or {}), **counted})
            change.collect(recorded)
        return finished

    async def _keep_referenced(
        self, uow: UnitOfWork, run: Run, referenced: Sequence[Artifact], now: datetime
    ) -> None:
        """Referenced artifacts locked at least as long as ``run`` (storage first: a
        failure there leaves every record as it was), and the references recorded."""
        backup = await lookups.backup(uow, run.workspace_id, run.backup_id)
        assert backup.retention is not None  # confirm_pending refused a backup without
        until = run_lock(backup.retention, now)
        extended = to_extend(referenced, until)
        if until is not None and extended:
            in_storage = [a for a in extended if a.storage is ArtifactStorage.SERVICE]
            await bounded(
                (self._deps.storage.extend_lock(a.object_key, until) for a in in_storage),
                STORAGE_CONCURRENCY,
            )
            await uow.artifacts.lock_until(run.workspace_id, [a.id for a in extended], until)
        await uow.artifacts.add_references(run.workspace_id, run.id, [a.id for a in referenced])

    async def confirm_pending(self, uow: UnitOfWork, run: Run, now: datetime) -> Run:
        """Inside ``uow``: check every pending artifact of ``run`` in storage, make them
        ``available`` (locked and expiring per the retention) and the run ``succeeded``;
        ``artifact_missing`` when one is absent or different. The caller audits and
        commits (a client's ``confirm``, or a cloud run's executor)."""
        run.ensure_open()
        workspace_id, run_id = run.workspace_id, run.id
        backup = await lookups.backup(uow, workspace_id, run.backup_id)
        if backup.retention is None:
            raise InvalidStateError("the backup has no retention policy")
        artifacts = await uow.artifacts.list_for_run(workspace_id, run_id)
        pending = [a for a in artifacts if a.state is ArtifactState.PENDING]
        stores = {a.id: self.storage_for(a, backup) for a in pending}
        missing = [a.name for a in pending if not await _arrived(stores[a.id], a)]
        if missing:
            raise ArtifactMissingError(
                "not in storage, or different from what was announced: "
                + ", ".join(sorted(missing))
            )
        confirmed = []
        for before in pending:
            checked = await _finish_upload(stores[before.id], before)
            after = before.confirmed(backup.retention, now, digest_checked=checked)
            locks = after.locked_until is not None and after.locked_until > now
            if locks and after.storage is ArtifactStorage.SERVICE:
                await self._lock(after)
            await uow.artifacts.update(after)
            confirmed.append(after)
        available = [a for a in artifacts if a.state is ArtifactState.AVAILABLE] + confirmed
        finished = run.succeeded(len(available), sum(a.size for a in available), now)
        await uow.runs.update(finished)
        await notify_run(self._deps, uow, finished)
        return finished

    async def _lock(self, artifact: Artifact) -> None:
        assert artifact.locked_until is not None
        # Already locked at least as long: a confirm retried after a failure.
        with contextlib.suppress(ObjectLockedError):
            await self._deps.storage.lock(artifact.object_key, artifact.locked_until)

    # ----------------------------------------------------------------------------------
    # Reads

    async def list_in(
        self, caller: Caller | Grant, workspace_id: UUID, deleted: bool, page: PageRequest
    ) -> Page[Artifact]:
        """A workspace's artifacts, newest first: deleted ones only, or every other."""
        caller, _ = await self._access.resolve(caller, LIST_ARTIFACTS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.artifacts.list(workspace_id, deleted, page)

    async def get(self, caller: Caller | Grant, artifact_id: UUID) -> Artifact:
        """One artifact of the caller's workspace, whatever its state (the list's
        permission; another workspace's is not found)."""
        caller, workspace_id = await self._access.resolve(
            caller, LIST_ARTIFACTS, target_id=artifact_id
        )
        async with self._deps.uow() as uow:
            return lookups.existing(await uow.artifacts.get(workspace_id, artifact_id), "artifact")

    async def download_url(
        self, caller: Caller | Grant, artifact_id: UUID
    ) -> tuple[PresignedRequest, datetime]:
        """A presigned GET of an available artifact in service storage."""
        caller, workspace_id = await self._access.resolve(caller, DOWNLOAD_ARTIFACT)
        async with self._deps.uow() as uow:
            artifact = lookups.existing(
                await uow.artifacts.get(workspace_id, artifact_id), "artifact"
            )
        artifact.ensure_downloadable()
        expires_at = self._deps.clock.now() + PRESIGNED_URL_LIFETIME
        request = await self._deps.storage.presign_get(
            artifact.object_key, expires_at, filename=artifact.name
        )
        return request, expires_at

    async def request_verification(self, caller: Caller | Grant, artifact_id: UUID) -> Artifact:
        """``POST /v1/artifacts/{aid}/verify``: the artifact's ``verification`` becomes
        ``pending``; the verifier re-reads its bytes soon after and records ``ok``,
        ``mismatch`` or ``missing`` with ``verified_at`` (contract 11). Audited
        ``artifact.verify`` by the caller (the result by ``system``); never refused for
        billing (it changes nothing the customer stores)."""
        caller, workspace_id = await self._access.resolve(
            caller, VERIFY_ARTIFACT, target_id=artifact_id
        )
        async with self._deps.uow() as uow:
            artifact = lookups.existing(
                await uow.artifacts.get(workspace_id, artifact_id, for_update=True), "artifact"
            )
            requested = artifact.verification_requested()
            await uow.artifacts.update(requested)
            uow.collect(
                by_caller(
                    self._deps, caller, workspace_id, artifact.recorded_verification(requested)
                )
            )
            await uow.commit()
        return requested

    # ----------------------------------------------------------------------------------
    # Delete

    async def delete(self, caller: Caller | Grant, artifact_id: UUID) -> None:
        """Delete an artifact's object; its record stays as ``deleted``."""
        caller, workspace_id = await self._access.resolve(
            caller, DELETE_ARTIFACT, target_id=artifact_id
        )
        now = self._deps.clock.now()
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            artifact = lookups.existing(
                await uow.artifacts.get(workspace_id, artifact_id, for_update=True), "artifact"
            )
            await change.gate(lock=False)
            referrers = await uow.artifacts.referrers(workspace_id, artifact_id)
            artifact.ensure_deletable(
                now,
                await uow.artifacts.count_available(workspace_id, artifact.backup_id),
                referenced=bool(live_referrers(referrers)),
            )
            await self.remove_object(
                artifact, await lookups.backup(uow, workspace_id, artifact.backup_id)
            )
            deleted = artifact.deleted()
            await uow.artifacts.update(deleted)
            await uncount(uow, artifact)
            change.collect(changed("artifact.delete", artifact, deleted))

    async def abort_pending(self, uow: UnitOfWork, run: Run, *, keep: bool = False) -> None:
        """Abort the uploads of the run's ``pending`` artifacts: their partial objects and
        unfinished multipart uploads removed. Their records become ``deleted`` (a failed
        run will not confirm them), or with ``keep`` stay ``pending``, so the next attempt
        of a requeued run announces the same names again and uploads afresh. They were
        never counted, so nothing is uncounted."""
        artifacts = await uow.artifacts.list_for_run(run.workspace_id, run.id)
        pending = [a for a in artifacts if a.state is ArtifactState.PENDING]
        if not pending:
            return
        backup = await lookups.backup(uow, run.workspace_id, run.backup_id)
        for artifact in pending:
            await self.remove_object(artifact, backup)
            if not keep:
                await uow.artifacts.update(artifact.deleted())

    async def remove_object(self, artifact: Artifact, backup: Backup) -> None:
        """Remove an artifact's bytes (and its unfinished upload) from where they went."""
        storage = self.storage_for(artifact, backup)
        if artifact.upload_id is not None:
            await storage.abort_multipart(artifact.object_key, artifact.upload_id)
        try:
            await storage.delete(artifact.object_key)
        except ObjectLockedError as error:
            raise ArtifactLockedError("storage refuses: the object is locked") from error


async def _arrived(storage: ObjectStorage, artifact: Artifact) -> bool:
    """Whether storage holds the artifact as announced (all parts of a multipart one)."""
    if artifact.upload_id is not None:
        parts = await storage.list_parts(artifact.object_key, artifact.upload_id)
        if parts is not None:
            plan = PartPlan.for_size(artifact.size)
            sizes = {part.number: part.size for part in parts}
            return all(
                sizes.get(number) == plan.part_length(number) for number in range(1, plan.count + 1)
            )
    stored = await storage.stat(artifact.object_key)
    return (
        stored is not None
        and stored.size == artifact.size
        and stored.sha256 in (None, artifact.sha256)
    )


async def _finish_upload(storage: ObjectStorage, artifact: Artifact) -> bool:
    """Join a multipart upload's parts and check the result's digest where storage can
    tell it. Whether the bytes were compared with the sha256: a single-request upload's
    digest is enforced by the store on the way in (a signed checksum, contract 13); a
    multipart one's only when storage knows the joined object's digest."""
    if artifact.upload_id is None:
        return True
    parts = await storage.list_parts(artifact.object_key, artifact.upload_id)
    if parts is not None:
        plan = PartPlan.for_size(artifact.size)
        chosen = [p for p in parts if 1 <= p.number <= plan.count]
        await storage.complete_multipart(artifact.object_key, artifact.upload_id, chosen)
    stored = await storage.stat(artifact.object_key)
    digest_differs = stored is not None and stored.sha256 not in (None, artifact.sha256)
    if stored is None or stored.size != artifact.size or digest_differs:
        raise ArtifactMissingError(
            f"{artifact.name}: the joined parts differ from what was announced"
        )
    return stored.sha256 is not None


async def uncount(uow: UnitOfWork, artifact: Artifact) -> None:
    """Take a deleted artifact out of its run's ``artifact_count`` and ``bytes``, which
    count ``available`` artifacts only (contract 10); a pending one was never counted."""
    if artifact.state is not ArtifactState.AVAILABLE:
        return
    run = await uow.runs.get(artifact.workspace_id, artifact.run_id, for_update=True)
    if run is not None:
        await uow.runs.update(run.without_artifact(artifact.size))
