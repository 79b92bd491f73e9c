"""Runs, artifacts, the retention job and the audit trail through the facade, with real
bytes in local-disk storage: start and trigger, upload, confirm, download, delete, locks,
expiry, billing gates, storage quota and tenant scoping."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.audit import Outcome
from strongroom.domain.backups import BackupChanges, BackupKind, S3Source
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    ArtifactLockedError,
    ArtifactMissingError,
    BillingRestrictedError,
    InvalidStateError,
    LastArtifactError,
    MissingPermissionError,
    NotFoundError,
    QuotaExceededError,
    ValidationFailedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import RunState, RunTrigger
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from support.people import (
    active_manual,
    api_key,
    audit_events,
    join,
    retention,
    upload,
    workspace_admin,
)
from support.world import memory_facade

DAY = timedelta(days=1)


class TestRuns:
    """Starting manual runs and triggering local or cloud backups."""

    async def test_a_manual_client_starts_a_running_run(self, facade: Strongroom) -> None:
        """An active manual backup gets a ``running`` manual run, audited ``run.create``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        assert (run.backup_id, run.state, run.trigger) == (
            backup,
            RunState.RUNNING,
            RunTrigger.MANUAL,
        )
        assert await facade.runs.get(ada, run.id) == run
        [event] = await audit_events(facade, ada, "run.create")
        assert event.target_id == str(run.id)

    async def test_only_an_active_unpaused_manual_backup_starts(self, facade: Strongroom) -> None:
        """A cloud backup is ``validation_failed``; a draft or paused one ``invalid_state``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        cloud = await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD)
        with pytest.raises(ValidationFailedError):
            await facade.runs.start(ada, cloud.id)
        draft = await facade.backups.create(ada, wid, "Draft", BackupKind.MANUAL)
        with pytest.raises(InvalidStateError, match="draft"):
            await facade.runs.start(ada, draft.id)
        paused = await active_manual(facade, ada, "Paused")
        await facade.backups.pause(ada, paused)
        with pytest.raises(InvalidStateError, match="paused"):
            await facade.runs.start(ada, paused)

    async def test_a_cloud_backup_is_triggered_into_a_queued_run(self, facade: Strongroom) -> None:
        """Triggering an active cloud backup queues a run by ``api``; a manual backup
        cannot be triggered."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        cloud = await facade.backups.create(ada, wid, "Cloud", BackupKind.CLOUD)
        source = S3Source(endpoint="https://s3.example.com", bucket="data")
        keys = {"access_key_id": "id", "secret_access_key": "secret"}
        policy = retention("P30D", "PT0S")
        await facade.backups.update(
            ada, cloud.id, BackupChanges(source=source, credentials=keys, retention=policy)
        )
        run = await facade.runs.trigger(ada, cloud.id)
        assert (run.state, run.trigger) == (RunState.QUEUED, RunTrigger.API)
        [event] = await audit_events(facade, ada, "backup.trigger")
        assert event.target_id == str(cloud.id)
        with pytest.raises(ValidationFailedError):
            await facade.runs.trigger(ada, await active_manual(facade, ada))

    @pytest.mark.parametrize(
        ("state", "allowed"),
        [(BillingState.WARNED, True), (BillingState.STOPPED, False), (BillingState.BLOCKED, False)],
    )
    async def test_billing_gates_new_runs(
        self, facade: Strongroom, state: BillingState, allowed: bool
    ) -> None:
        """``stopped`` and ``blocked`` refuse new runs; reading a run is never refused."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        earlier = await facade.runs.start(ada, backup)
        await facade.workspaces.set_billing_state(wid, state)
        if allowed:
            await facade.runs.start(ada, backup)
        else:
            with pytest.raises(BillingRestrictedError, match=state.value):
                await facade.runs.start(ada, backup)
        assert await facade.runs.get(ada, earlier.id) == earlier

    async def test_a_foreign_run_or_backup_is_not_found(self, facade: Strongroom) -> None:
        """Bob can neither start a run of Ada's backup nor read Ada's run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        with pytest.raises(NotFoundError, match="backup"):
            await facade.runs.start(bob, backup)
        for run_id in (run.id, uuid4()):
            with pytest.raises(NotFoundError, match="run"):
                await facade.runs.get(bob, run_id)

    async def test_a_viewer_cannot_start_runs(self, facade: Strongroom) -> None:
        """Starting needs ``artifacts:upload``; the refusal is audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        with pytest.raises(MissingPermissionError, match="artifacts:upload"):
            await facade.runs.start(vera, backup)
        [event] = await audit_events(facade, ada, "run.create")
        assert (event.actor, event.outcome) == (vera.actor, Outcome.DENIED)


class TestArtifacts:
    """Upload, confirm, download and delete."""

    async def test_confirm_makes_uploaded_artifacts_available(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """After the bytes arrive, confirm marks the artifact available with its lock and
        expiry from the retention policy, and the run succeeded with its count and size."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P30D", lock_for="P7D")
        run = await facade.runs.start(ada, backup)
        await upload(facade, storage, ada, run.id, "db.dump", b"0123456789")
        finished = await facade.artifacts.confirm(ada, run.id)
        assert (finished.state, finished.artifact_count, finished.bytes) == (
            RunState.SUCCEEDED,
            1,
            10,
        )
        [artifact] = (await facade.artifacts.list_in(ada, wid, False, PageRequest())).items
        assert artifact.state is ArtifactState.AVAILABLE
        assert artifact.locked_until == clock.now() + 7 * DAY
        assert artifact.expires_at == clock.now() + 30 * DAY
        request, _ = await facade.artifacts.download_url(ada, artifact.id)
        assert request.method == "GET"

    async def test_confirm_without_the_bytes_changes_nothing(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """An announced artifact that never arrived is ``artifact_missing`` naming it; the
        run stays open and the artifact pending."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        plan = await facade.artifacts.upload_url(ada, run.id, "db.dump", 3, "ab" * 32)
        with pytest.raises(ArtifactMissingError, match=r"db\.dump"):
            await facade.artifacts.confirm(ada, run.id)
        assert (await facade.runs.get(ada, run.id)).state is RunState.RUNNING
        [pending] = (await facade.artifacts.list_in(ada, wid, False, PageRequest())).items
        assert (pending.id, pending.state) == (plan.artifact.id, ArtifactState.PENDING)

    async def test_asking_again_gives_the_same_artifact(self, facade: Strongroom) -> None:
        """The same name, size and digest is the same artifact; another size conflicts."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        first = await facade.artifacts.upload_url(ada, run.id, "db.dump", 3, "ab" * 32)
        again = await facade.artifacts.upload_url(ada, run.id, "db.dump", 3, "ab" * 32)
        assert again.artifact.id == first.artifact.id
        with pytest.raises(InvalidStateError, match="another size"):
            await facade.artifacts.upload_url(ada, run.id, "db.dump", 4, "ab" * 32)

    async def test_storage_quota_counts_announced_bytes(self, facade: Strongroom) -> None:
        """With 10 bytes of storage, announcing 11 is ``quota_exceeded``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 10)
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        await facade.artifacts.upload_url(ada, run.id, "a", 6, "ab" * 32)
        with pytest.raises(QuotaExceededError, match="storage_bytes"):
            await facade.artifacts.upload_url(ada, run.id, "b", 5, "ab" * 32)

    async def test_locked_then_last_then_deletable(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """Inside its lock an artifact is ``artifact_locked``; after it, the backup's last
        artifact is ``last_artifact``; with a newer one, it is deleted and audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P30D", lock_for="P1D")
        first = await facade.runs.start(ada, backup)
        artifact = await upload(facade, storage, ada, first.id, "one", b"one")
        await facade.artifacts.confirm(ada, first.id)
        with pytest.raises(ArtifactLockedError):
            await facade.artifacts.delete(ada, artifact.id)
        clock.advance(2 * DAY)
        with pytest.raises(LastArtifactError):
            await facade.artifacts.delete(ada, artifact.id)
        second = await facade.runs.start(ada, backup)
        await upload(facade, storage, ada, second.id, "two", b"two")
        await facade.artifacts.confirm(ada, second.id)
        await facade.artifacts.delete(ada, artifact.id)
        deleted = (await facade.artifacts.list_in(ada, wid, True, PageRequest())).items
        assert [a.id for a in deleted] == [artifact.id]
        assert (await facade.runs.get(ada, first.id)).artifact_count == 0
        [event] = await audit_events(facade, ada, "artifact.delete")
        assert (event.actor, event.target_id) == (ada.actor, str(artifact.id))

    async def test_a_foreign_artifact_is_not_found(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Bob can neither download nor delete Ada's artifact, nor upload into her run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        artifact = await upload(facade, storage, ada, run.id, "one", b"one")
        await facade.artifacts.confirm(ada, run.id)
        with pytest.raises(NotFoundError, match="artifact"):
            await facade.artifacts.download_url(bob, artifact.id)
        with pytest.raises(NotFoundError, match="artifact"):
            await facade.artifacts.delete(bob, artifact.id)
        with pytest.raises(NotFoundError, match="run"):
            await facade.artifacts.upload_url(bob, run.id, "x", 1, "ab" * 32)

    async def test_blocked_refuses_uploads(self, facade: Strongroom) -> None:
        """A blocked workspace takes no uploads into existing runs."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.artifacts.upload_url(ada, run.id, "x", 1, "ab" * 32)

    async def test_a_worker_uploads_for_its_own_backups_only(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """A worker confirms a run of the local backup assigned to it; a run of another
        backup is not found to it."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        worker = await facade.access.authenticate(issued.token)
        local = await facade.backups.create(ada, wid, "Laptop", BackupKind.LOCAL)
        policy = retention("P30D", "PT0S")
        await facade.backups.update(
            ada, local.id, BackupChanges(worker_id=issued.worker.id, retention=policy)
        )
        run = await facade.runs.trigger(ada, local.id)
        await upload(facade, storage, worker, run.id, "home.tar", b"home")
        assert (await facade.artifacts.confirm(worker, run.id)).state is RunState.SUCCEEDED
        other = await facade.runs.start(ada, await active_manual(facade, ada))
        with pytest.raises(NotFoundError):
            await facade.artifacts.upload_url(worker, other.id, "x", 1, "ab" * 32)


class TestRetentionJob:
    """``retention.run``: expired artifacts go, except locked ones and a backup's last."""

    async def test_removes_expired_artifacts_but_keeps_the_last(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """Two expired artifacts of one backup: the older goes (audited as system), the
        newer is kept as the backup's last."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P1D", lock_for="PT0S")
        uploaded = []
        for name in ("old", "new"):
            run = await facade.runs.start(ada, backup)
            uploaded.append(await upload(facade, storage, ada, run.id, name, name.encode()))
            await facade.artifacts.confirm(ada, run.id)
            clock.advance(timedelta(hours=1))
        clock.advance(2 * DAY)
        report = await facade.retention.run()
        assert (report.removed, report.kept_last, report.kept_locked) == (1, 1, 0)
        deleted = (await facade.artifacts.list_in(ada, wid, True, PageRequest())).items
        assert [a.id for a in deleted] == [uploaded[0].id]
        [event] = await audit_events(facade, ada, "artifact.delete")
        assert event.actor == SYSTEM_ACTOR

    async def test_keeps_what_is_not_expired(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Nothing expired: the job removes nothing."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        for name in ("one", "two"):
            run = await facade.runs.start(ada, backup)
            await upload(facade, storage, ada, run.id, name, name.encode())
            await facade.artifacts.confirm(ada, run.id)
        report = await facade.retention.run()
        assert (report.removed, report.kept_last, report.failed) == (0, 0, 0)


class TestAuditTrail:
    """Reading the audit trail: filtered, newest first, for ``audit:read`` holders."""

    async def test_filters_by_action_and_actor(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Filtering by actor shows only that actor's events, newest first."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        for name in ("one", "two"):
            clock.advance(timedelta(seconds=1))
            await facade.backups.create(max_, wid, name, BackupKind.MANUAL)
        page = await facade.audit.events(
            ada, wid, AuditFilter(actor_id=max_.actor.id), PageRequest()
        )
        assert all(e.actor == max_.actor for e in page.items)
        created = [e for e in page.items if e.action == "backup.create"]
        assert [e.changes["name"].after for e in created if e.changes] == ["two", "one"]

    async def test_needs_audit_read_and_stays_in_its_workspace(self, facade: Strongroom) -> None:
        """A key without ``audit:read`` is refused; another workspace's trail is not found."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        _, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        key = await api_key(facade, ada, ["backups:read"])
        with pytest.raises(MissingPermissionError, match="audit:read"):
            await facade.audit.events(key, wid, AuditFilter(), PageRequest())
        with pytest.raises(NotFoundError, match="workspace"):
            await facade.audit.events(ada, globex, AuditFilter(), PageRequest())


class TestAuditCompleteness:
    """Every successful write the facade performs leaves exactly one success event."""

    @settings(max_examples=10)
    @given(st.lists(st.sampled_from(["create", "pause", "resume", "rename"]), max_size=8))
    def test_one_event_per_write(self, steps: list[str]) -> None:
        """For any sequence of backup writes, the trail holds one ``backup.*`` success
        event per write, in order."""

        async def scenario() -> None:
            clock = ManualClock()
            facade = memory_facade(clock)
            ada, wid = await workspace_admin(facade, "ada@example.com")
            backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
            expected = ["backup.create"]
            for number, step in enumerate(steps):
                clock.advance(timedelta(seconds=1))
                if step == "create":
                    await facade.backups.create(ada, wid, f"b{number}", BackupKind.MANUAL)
                    expected.append("backup.create")
                elif step == "rename":
                    await facade.backups.update(ada, backup.id, BackupChanges(name=f"n{number}"))
                    expected.append("backup.update")
                else:
                    await getattr(facade.backups, step)(ada, backup.id)
                    expected.append(f"backup.{step}")
            events = [
                e.action
                for e in reversed(await audit_events(facade, ada))
                if e.action.startswith("backup.") and e.outcome is Outcome.SUCCESS
            ]
            assert events == expected

        asyncio.run(scenario())
