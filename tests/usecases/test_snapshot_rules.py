"""Snapshot rules through the facade on the in-memory adapter (contract 14): confirm with
references (what it refuses, the locks it extends in the record and in storage, the
references it records), deletes refused while a live run references an artifact, and the
batch presigning of uploads and downloads (all or nothing, in the order asked)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.encryption import Encryption
from strongroom.domain.errors import (
    ArtifactReferencedError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    InvalidStateError,
    NotFoundError,
    QuotaExceededError,
    ValidationFailedError,
)
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driven.storage import ObjectLockedError
from strongroom.ports.driving import Strongroom
from support.people import (
    active_manual,
    audit_events,
    put_presigned,
    retention,
    upload,
    workspace_admin,
)

DAY = timedelta(days=1)
ALICE = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"


def item(name: str, content: bytes) -> tuple[str, int, str]:
    return name, len(content), hashlib.sha256(content).hexdigest()


async def confirmed_run(
    facade: Strongroom,
    storage: LocalDiskStorage,
    caller: Caller,
    backup_id: UUID,
    contents: dict[str, bytes],
    references: list[UUID] | None = None,
) -> dict[str, Artifact]:
    """A run of ``backup_id`` with these artifacts, confirmed with ``references``."""
    run = await facade.runs.start(caller, backup_id)
    made = {
        name: await upload(facade, storage, caller, run.id, name, data)
        for name, data in contents.items()
    }
    await facade.artifacts.confirm(caller, run.id, references or [])
    return made


async def artifact(facade: Strongroom, caller: Caller, artifact_id: UUID) -> Artifact:
    async with facade.deps.uow() as uow:
        found = await uow.artifacts.get(caller.scoped_workspace(), artifact_id)
    assert found is not None
    return found


class TestConfirmReferences:
    async def test_refusals_change_nothing(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Unknown, of another backup or of this run: 404; deleted: 409 naming it; the
        run stays open and nothing is referenced."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        other = await active_manual(facade, ada, "Other")
        first = await confirmed_run(facade, storage, ada, backup, {"pack": b"p", "keep": b"k"})
        foreign = await confirmed_run(facade, storage, ada, other, {"pack": b"o"})
        run = await facade.runs.start(ada, backup)
        own = await upload(facade, storage, ada, run.id, "index", b"i")
        for named in ([uuid4()], [foreign["pack"].id], [own.id]):
            with pytest.raises(NotFoundError):
                await facade.artifacts.confirm(ada, run.id, named)
        await facade.artifacts.delete(ada, first["pack"].id)
        with pytest.raises(InvalidStateError) as deleted:
            await facade.artifacts.confirm(ada, run.id, [first["pack"].id])
        assert str(first["pack"].id) in deleted.value.message
        assert (await facade.runs.get(ada, run.id)).state.value == "running"
        async with facade.deps.uow() as uow:
            assert await uow.artifacts.references_of_backup(ada.scoped_workspace(), backup) == {}

    async def test_referenced_artifacts_take_the_runs_lock_in_record_and_storage(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """A shorter lock is extended to the new run's (never shortened), in the record and
        in the storage's own lock; the references are recorded and audited."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P2D")
        first = await confirmed_run(facade, storage, ada, backup, {"pack": b"p", "i": b"1"})
        clock.advance(DAY)
        second = await confirmed_run(
            facade, storage, ada, backup, {"i": b"2"}, [first["pack"].id, first["pack"].id]
        )
        pack = await artifact(facade, ada, first["pack"].id)
        index = await artifact(facade, ada, second["i"].id)
        assert pack.locked_until == index.locked_until == clock.now() + 2 * DAY
        assert (await artifact(facade, ada, first["i"].id)).locked_until == clock.now() + DAY
        clock.advance(2 * DAY + timedelta(seconds=-1))
        with pytest.raises(ObjectLockedError):
            await storage.delete(pack.object_key)
        async with facade.deps.uow() as uow:
            found = await uow.artifacts.references_of_backup(ada.scoped_workspace(), backup)
        assert found == {second["i"].run_id: frozenset({pack.id})}
        newest = (await audit_events(facade, ada, "run.confirm"))[0]
        assert newest.changes["references"].after == 1


class TestDeleteReferenced:
    async def test_refused_while_a_referencing_run_is_live(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """`artifact_referenced` until the referencing run has no available artifact."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="PT0S")
        first = await confirmed_run(facade, storage, ada, backup, {"pack": b"p", "i": b"1"})
        second = await confirmed_run(facade, storage, ada, backup, {"i": b"2"}, [first["pack"].id])
        await confirmed_run(facade, storage, ada, backup, {"i": b"3"})
        with pytest.raises(ArtifactReferencedError):
            await facade.artifacts.delete(ada, first["pack"].id)
        await facade.artifacts.delete(ada, second["i"].id)
        await facade.artifacts.delete(ada, first["pack"].id)
        assert (await artifact(facade, ada, first["pack"].id)).state is ArtifactState.DELETED


class TestBatchUploads:
    async def test_plans_in_the_order_asked_and_resumable(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """One plan per item in order (a name asked twice, or again later, is the same
        artifact); every plan's PUT works and confirm takes them all."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        blobs = {"b": b"bee", "a": b"ay", "c": b"sea"}
        asked = [item(n, d) for n, d in blobs.items()] + [item("b", b"bee")]
        plans = await facade.transfers.upload_urls(ada, run.id, asked)
        assert [p.artifact.name for p in plans] == ["b", "a", "c", "b"]
        assert plans[0].artifact.id == plans[3].artifact.id
        again = await facade.transfers.upload_urls(ada, run.id, [item("a", b"ay")])
        assert again[0].artifact.id == plans[1].artifact.id
        for plan, data in zip(plans, [*blobs.values()], strict=False):
            assert plan.request is not None
            put_presigned(storage, plan.request, data)
        done = await facade.artifacts.confirm(ada, run.id)
        assert done.artifact_count == 3
        assert len(await audit_events(facade, ada, "artifact.create")) == 3

    async def test_all_or_nothing(self, facade: Strongroom, storage: LocalDiskStorage) -> None:
        """A refused item refuses all, nothing announced; the quota counts them together."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        with pytest.raises(InvalidRequestError):
            await facade.transfers.upload_urls(ada, run.id, [item("a", b"a"), ("b", 1, "zz")])
        with pytest.raises(InvalidStateError):
            await facade.transfers.upload_urls(ada, run.id, [item("a", b"a"), item("a", b"b")])
        with pytest.raises(InvalidRequestError):
            await facade.transfers.upload_urls(ada, run.id, [])
        await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 5)
        with pytest.raises(QuotaExceededError):
            await facade.transfers.upload_urls(ada, run.id, [item("a", b"abc"), item("b", b"def")])
        async with facade.deps.uow() as uow:
            assert await uow.artifacts.list_for_run(wid, run.id) == []


class TestBatchDownloads:
    async def test_in_order_and_refused_whole(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """URLs in the order asked; unknown: 404; deleted: conflict; pending: invalid_state."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        made = await confirmed_run(facade, storage, ada, backup, {"a": b"1", "b": b"2", "c": b"3"})
        ids = [made["c"].id, made["a"].id]
        got = await facade.transfers.download_urls(ada, ids)
        assert [d.artifact_id for d in got] == ids
        assert all(d.request.method == "GET" for d in got)
        with pytest.raises(NotFoundError):
            await facade.transfers.download_urls(ada, [made["a"].id, uuid4()])
        await facade.artifacts.delete(ada, made["b"].id)
        with pytest.raises(ConflictError) as deleted:
            await facade.transfers.download_urls(ada, [made["a"].id, made["b"].id])
        assert deleted.value.code == "conflict"
        run = await facade.runs.start(ada, backup)
        pending = await upload(facade, storage, ada, run.id, "p", b"p")
        with pytest.raises(InvalidStateError):
            await facade.transfers.download_urls(ada, [pending.id])


class TestSnapshotBackups:
    async def test_created_with_recipients_and_refused_on_cloud(self, facade: Strongroom) -> None:
        ada, wid = await workspace_admin(facade, "ada@example.com")
        made = await facade.backups.create(
            ada, wid, "Home", BackupKind.LOCAL, encryption=Encryption([ALICE])
        )
        assert made.format.value == "snapshot"
        with pytest.raises(ValidationFailedError):
            await facade.backups.create(
                ada, wid, "Db", BackupKind.CLOUD, encryption=Encryption([ALICE])
            )
        (event,) = await audit_events(facade, ada, "backup.create")
        assert event.changes["encryption"].after == [ALICE]


class TestWriteOnlyWorker:
    async def test_a_worker_uploads_in_batches_confirms_references_and_never_downloads(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """A worker's snapshot run: batch uploads and a confirm with references of its
        backup's earlier run work; a download URL, batched or not, is forbidden."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack-1")
        backup = await facade.backups.create(
            ada, wid, "Home", BackupKind.LOCAL, encryption=Encryption([ALICE])
        )
        changes = BackupChanges(worker_id=issued.worker.id, retention=retention("P1D", "PT0S"))
        await facade.backups.update(ada, backup.id, changes)
        worker = await facade.access.authenticate(issued.token)
        made: list[UUID] = []
        for content, references in ((b"pack", []), (b"index", made)):
            run = await facade.runs.trigger(ada, backup.id)
            (plan,) = await facade.transfers.upload_urls(worker, run.id, [item("p", content)])
            assert plan.request is not None
            put_presigned(storage, plan.request, content)
            await facade.artifacts.confirm(worker, run.id, list(references))
            made.append(plan.artifact.id)
        with pytest.raises(ForbiddenError):
            await facade.transfers.download_urls(worker, made)
        with pytest.raises(ForbiddenError):
            await facade.artifacts.download_url(worker, made[0])
