"""Artifact rules through the facade with real bytes in local-disk storage: delete
precedence and what a delete changes, locks holding backups and workspaces, the billing
gates of uploads and deletes, the storage quota, and the retention job.

Moved down from ``tests/http/test_artifacts.py`` (``TestDelete``, ``TestGates``,
``TestRetention``): the same numbers, states and error codes, without HTTP."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    ArtifactLockedError,
    BillingRestrictedError,
    ConflictError,
    InvalidStateError,
    LastArtifactError,
    NotFoundError,
    QuotaExceededError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import RunState
from strongroom.ports.driving import Strongroom
from support.people import active_manual, audit_events, retention, upload, workspace_admin
from support.world import memory_facade

DAY = timedelta(days=1)
MIB = 1024 * 1024


async def stored(
    facade: Strongroom,
    storage: LocalDiskStorage,
    caller: Caller,
    backup_id: UUID,
    name: str,
    content: bytes,
) -> Artifact:
    """A confirmed artifact in a new run of ``backup_id``."""
    run = await facade.runs.start(caller, backup_id)
    artifact = await upload(facade, storage, caller, run.id, name, content)
    await facade.artifacts.confirm(caller, run.id)
    return artifact


async def listed(facade: Strongroom, caller: Caller, *, deleted: bool = False) -> list[UUID]:
    """The ids of the workspace's artifacts (the deleted ones when ``deleted``)."""
    page = await facade.artifacts.list_in(
        caller, caller.scoped_workspace(), deleted, PageRequest(200)
    )
    if deleted:
        return [a.id for a in page.items if a.state is ArtifactState.DELETED]
    return [a.id for a in page.items]


async def storage_usage(facade: Strongroom, caller: Caller) -> int:
    """The workspace's ``storage_bytes`` usage."""
    quotas = await facade.workspaces.quotas(caller, caller.scoped_workspace())
    (entry,) = [q for q in quotas if q.resource is QuotaResource.STORAGE_BYTES]
    return entry.usage


class TestDelete:
    """Delete precedence and what a delete changes (contract 10)."""

    async def test_precedence_conflict_locked_last(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """Locked first; once unlocked, the last one is kept; then deleted and conflict."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P1D")
        first = await stored(facade, storage, ada, backup, "a", b"one")
        with pytest.raises(ArtifactLockedError):
            await facade.artifacts.delete(ada, first.id)
        clock.advance(2 * DAY)
        with pytest.raises(LastArtifactError):
            await facade.artifacts.delete(ada, first.id)
        second = await stored(facade, storage, ada, backup, "b", b"two")
        clock.advance(2 * DAY)
        await facade.artifacts.delete(ada, first.id)
        with pytest.raises(ConflictError) as again:
            await facade.artifacts.delete(ada, first.id)
        assert again.value.code == "conflict"
        with pytest.raises(ConflictError) as download:
            await facade.artifacts.download_url(ada, first.id)
        assert download.value.code == "conflict"
        assert await listed(facade, ada) == [second.id]
        assert await listed(facade, ada, deleted=True) == [first.id]
        assert await storage_usage(facade, ada) == 3
        with pytest.raises(LastArtifactError):
            await facade.artifacts.delete(ada, second.id)

    async def test_a_run_counts_only_its_available_artifacts(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Contract 10: ``artifact_count`` and ``bytes`` of a run count its ``available``
        artifacts, so deleting one lowers them (issue 12, finding 8)."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="PT0S")
        run = await facade.runs.start(ada, backup)
        first = await upload(facade, storage, ada, run.id, "a", b"first!")
        await upload(facade, storage, ada, run.id, "b", b"second artifact")
        confirmed = await facade.artifacts.confirm(ada, run.id)
        assert (confirmed.artifact_count, confirmed.bytes) == (2, 21)
        await facade.artifacts.delete(ada, first.id)
        after = await facade.runs.get(ada, run.id)
        assert (after.artifact_count, after.bytes) == (1, 15)

    async def test_backup_and_workspace_delete_are_refused_while_locked(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """``artifact_locked`` for both; after the lock, the backup and its artifacts go."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P1D")
        await stored(facade, storage, ada, backup, "a", b"one")
        with pytest.raises(ArtifactLockedError):
            await facade.backups.delete(ada, backup)
        with pytest.raises(ArtifactLockedError):
            await facade.workspaces.delete(ada, wid)
        clock.advance(2 * DAY)
        await facade.backups.delete(ada, backup)
        assert await listed(facade, ada) == []

    async def test_blocked_refuses_delete_but_not_list_or_download(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Billing: delete is a write, list and download-url are reads."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="PT0S")
        first = await stored(facade, storage, ada, backup, "a", b"one")
        await stored(facade, storage, ada, backup, "b", b"two")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.artifacts.delete(ada, first.id)
        assert len(await listed(facade, ada)) == 2
        await facade.artifacts.download_url(ada, first.id)


class TestUploads:
    """What a run takes once it is finished."""

    async def test_a_finished_run_takes_nothing_more(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Confirm and upload-url on a succeeded run: ``invalid_state``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        await upload(facade, storage, ada, run.id, "a", b"x")
        await facade.artifacts.confirm(ada, run.id)
        with pytest.raises(InvalidStateError):
            await facade.artifacts.confirm(ada, run.id)
        with pytest.raises(InvalidStateError):
            await facade.artifacts.upload_url(ada, run.id, "b", 1, "ab" * 32)


class TestWorkerReach:
    """A worker reaches only the runs of the backups assigned to it."""

    async def test_a_worker_uploads_into_its_own_runs_only(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Read, upload-url and confirm: its backup's run works (succeeded); another
        worker's run is ``not_found``, and so is starting a manual backup's run."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        tokens, runs = [], []
        for name in ("rack-1", "rack-2"):
            issued = await facade.workers.create(ada, name)
            tokens.append(issued.token)
            backup = await facade.backups.create(ada, wid, f"local-{name}", BackupKind.LOCAL)
            changes = BackupChanges(worker_id=issued.worker.id, retention=retention("P1D", "PT0S"))
            await facade.backups.update(ada, backup.id, changes)
            runs.append((await facade.runs.trigger(ada, backup.id)).id)
        worker = await facade.access.authenticate(tokens[0])
        assert (await facade.runs.get(worker, runs[0])).id == runs[0]
        with pytest.raises(NotFoundError):
            await facade.runs.get(worker, runs[1])
        with pytest.raises(NotFoundError):
            await facade.artifacts.upload_url(worker, runs[1], "a", 1, "ab" * 32)
        with pytest.raises(NotFoundError):
            await facade.artifacts.confirm(worker, runs[1])
        await upload(facade, storage, worker, runs[0], "a", b"x")
        assert (await facade.artifacts.confirm(worker, runs[0])).state is RunState.SUCCEEDED
        manual = await active_manual(facade, ada, "Manual")
        with pytest.raises(NotFoundError):
            await facade.runs.start(worker, manual)


class TestGates:
    """Billing and quota on uploads."""

    async def test_stopped_still_uploads_into_existing_runs_blocked_does_not(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Contract 4: uploads into an existing run are refused only when blocked."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        await facade.workspaces.set_billing_state(wid, BillingState.STOPPED)
        await upload(facade, storage, ada, run.id, "a", b"x")
        await facade.artifacts.confirm(ada, run.id)
        await facade.workspaces.set_billing_state(wid, BillingState.ACTIVE)
        open_run = await facade.runs.start(ada, await active_manual(facade, ada, "Second"))
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError, match="blocked"):
            await facade.artifacts.upload_url(ada, open_run.id, "a", 1, "ab" * 32)
        with pytest.raises(BillingRestrictedError):
            await facade.artifacts.confirm(ada, open_run.id)

    async def test_storage_quota_counts_available_and_pending_bytes(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """A limit of 10 bytes: 6 stored, 4 more fit, then ``quota_exceeded``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 10)
        backup = await active_manual(facade, ada)
        await stored(facade, storage, ada, backup, "a", b"sixsix")
        run = await facade.runs.start(ada, backup)
        await facade.artifacts.upload_url(ada, run.id, "b", 4, "ab" * 32)
        with pytest.raises(QuotaExceededError, match="storage_bytes") as refused:
            await facade.artifacts.upload_url(ada, run.id, "c", 1, "ab" * 32)
        assert refused.value.code == "quota_exceeded"

    @settings(max_examples=10, deadline=None)
    @given(
        limit=st.integers(min_value=1, max_value=40),
        sizes=st.lists(st.integers(min_value=0, max_value=15), min_size=1, max_size=5),
    )
    def test_announced_bytes_fit_while_their_sum_stays_within_the_limit(
        self, limit: int, sizes: list[int]
    ) -> None:
        """Pending announcements count against the limit: each is accepted exactly when the
        bytes already announced plus its own stay within it. The reported usage counts only
        confirmed bytes, so it stays 0 while they are pending."""

        async def scenario() -> None:
            facade = memory_facade(ManualClock())
            ada, wid = await workspace_admin(facade, "ada@example.com")
            await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, limit)
            run = await facade.runs.start(ada, await active_manual(facade, ada))
            announced = 0
            for number, size in enumerate(sizes):
                name = f"a{number}"
                if announced + size > limit:
                    with pytest.raises(QuotaExceededError, match="storage_bytes"):
                        await facade.artifacts.upload_url(ada, run.id, name, size, "ab" * 32)
                else:
                    await facade.artifacts.upload_url(ada, run.id, name, size, "ab" * 32)
                    announced += size
            assert await storage_usage(facade, ada) == 0

        asyncio.run(scenario())


class TestRetention:
    """The retention job: expired ones go, never the last nor a locked one."""

    async def test_expired_artifacts_go_but_never_a_backups_last(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """Two expired of one backup: the older goes (audited as system), the last stays;
        the older run counts none now (contract 10); a second pass removes nothing."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P2D", lock_for="P1D")
        older = await stored(facade, storage, ada, backup, "a", b"one")
        clock.advance(timedelta(hours=1))
        newer = await stored(facade, storage, ada, backup, "b", b"two")
        clock.advance(3 * DAY)
        report = await facade.retention.run()
        assert (report.removed, report.kept_last) == (1, 1)
        assert await listed(facade, ada) == [newer.id]
        assert await listed(facade, ada, deleted=True) == [older.id]
        counts = []
        for artifact in (newer, older):
            run = await facade.runs.get(ada, artifact.run_id)
            counts.append((run.artifact_count, run.bytes))
        assert counts == [(1, 3), (0, 0)]
        events = await audit_events(facade, ada, "artifact.delete")
        assert [(e.actor, e.target_id) for e in events] == [(SYSTEM_ACTOR, str(older.id))]
        assert (await facade.retention.run()).removed == 0

    async def test_an_object_storage_keeps_locked_stays(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """If storage still holds a lock, the record stays available."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P1D", lock_for="PT0S")
        first = await stored(facade, storage, ada, backup, "a", b"one")
        clock.advance(timedelta(seconds=1))  # the second is the backup's last
        await stored(facade, storage, ada, backup, "b", b"two")
        await storage.lock(first.object_key, clock.now() + 30 * DAY)
        clock.advance(2 * DAY)
        report = await facade.retention.run()
        assert report.kept_locked == 1
        assert first.id in await listed(facade, ada)

    async def test_stale_multipart_uploads_are_aborted(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """An upload begun more than a day ago is aborted; asking again starts a new one."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        plan = await facade.artifacts.upload_url(ada, run.id, "big", 64 * MIB, "ab" * 32)
        assert plan.artifact.upload_id is not None
        clock.advance(2 * DAY)
        assert (await facade.retention.run()).aborted_uploads == 1
        again = await facade.artifacts.upload_url(ada, run.id, "big", 64 * MIB, "ab" * 32)
        assert again.artifact.id == plan.artifact.id
        assert again.artifact.upload_id != plan.artifact.upload_id
        assert again.stored_parts == ()
