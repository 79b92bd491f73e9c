"""Restores through the facade (contract 11): asking for one, its refusals in the
contract's order, reading it, and the service-side runner that does the work, on the
in-memory adapters with real bytes in local-disk storage (the targets are recorded here;
real buckets and databases are in tests/integration/test_restores_real.py)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from uuid import uuid4

import attrs
import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.restores import RestoreRunner
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact
from strongroom.domain.backups import PostgresSource, S3Source
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    ConflictError,
    IdempotencyConflictError,
    InvalidRequestError,
    InvalidStateError,
    MissingPermissionError,
    NotFoundError,
    ValidationFailedError,
)
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.domain.restores import RestoreState
from strongroom.ports.driving import IdempotencyKey, Strongroom
from support.people import active_manual, api_key, audit_events, upload, workspace_admin
from support.restores import RecordingTargets, cloud_backup, confirmed_artifact
from support.world import memory_facade

BUCKET = S3Source(endpoint="https://s3.example.com", bucket="source")
DATABASE = PostgresSource(host="db.example.com", port=5432, database="app")
S3_KEYS = {"access_key_id": "target-key", "secret_access_key": "target-secret-xyz"}
PG_KEYS = {"username": "restorer", "password": "target-password-xyz"}
TARGET = S3Source(endpoint="https://s3.example.net", bucket="restored", prefix="again/")


@pytest.fixture
def targets() -> RecordingTargets:
    """The recording restore target the facade writes to."""
    return RecordingTargets()


@pytest.fixture
def facade(clock: ManualClock, storage: LocalDiskStorage, targets: RecordingTargets) -> Strongroom:
    """The in-memory facade with the recording restore target."""
    return memory_facade(clock, storage=storage, restore_targets=targets)


async def s3_artifact(facade: Strongroom, admin: Caller, content: bytes = b"archive") -> Artifact:
    """A confirmed artifact of a cloud backup of an S3 source."""
    backup = await cloud_backup(facade, admin, BUCKET)
    return await confirmed_artifact(facade, admin, backup.id, content)


class TestCreate:
    """``POST /v1/artifacts/{aid}/restores`` as a use case."""

    async def test_a_restore_is_queued_and_audited_without_secrets(
        self, facade: Strongroom
    ) -> None:
        """A queued restore naming the artifact and target; the credentials are sealed
        (not readable in the record) and appear nowhere in the audit trail."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        assert (restore.state, restore.artifact_id, restore.target) == (
            RestoreState.QUEUED,
            artifact.id,
            TARGET,
        )
        assert restore.sealed_credentials is not None
        assert b"target-secret-xyz" not in restore.sealed_credentials
        assert await facade.restores.get(ada, restore.id) == restore
        [event] = await audit_events(facade, ada, "restore.create")
        assert event.target_id == str(restore.id)
        assert event.actor == ada.actor
        shown = json.dumps({k: [c.before, c.after] for k, c in (event.changes or {}).items()})
        assert "target-secret-xyz" not in shown
        assert "restored" in shown

    async def test_local_and_manual_artifacts_are_refused_as_a_kind_rule(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """A manual backup's artifact is restored by its client: 422 naming download-url."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        artifact = await upload(facade, storage, ada, run.id, "dump", b"bytes")
        await facade.artifacts.confirm(ada, run.id)
        with pytest.raises(ValidationFailedError, match="download-url"):
            await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)

    async def test_the_target_type_must_be_the_source_type(self, facade: Strongroom) -> None:
        """An s3 artifact into a database, or with database credentials: 422."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        with pytest.raises(ValidationFailedError, match="does not match"):
            await facade.restores.create(ada, artifact.id, DATABASE, PG_KEYS)
        with pytest.raises(ValidationFailedError, match="credentials"):
            await facade.restores.create(ada, artifact.id, TARGET, PG_KEYS)
        with pytest.raises(InvalidRequestError):
            await facade.restores.create(ada, artifact.id, TARGET, {"access_key_id": "x"})

    async def test_a_target_at_a_disallowed_literal_address_is_refused(
        self, facade: Strongroom
    ) -> None:
        """Loopback and cloud metadata are outside the default outbound policy: 422."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        for endpoint in ("http://127.0.0.1:9000", "http://169.254.169.254"):
            target = S3Source(endpoint=endpoint, bucket="b")
            with pytest.raises(ValidationFailedError, match=r"target\.endpoint"):
                await facade.restores.create(ada, artifact.id, target, S3_KEYS)

    async def test_a_deleted_or_unconfirmed_artifact_is_refused(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Pending: 409 ``invalid_state``; deleted: 409 ``conflict``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_backup(facade, ada, BUCKET)
        run = await facade.runs.trigger(ada, backup.id)
        pending = await upload(facade, storage, ada, run.id, "dump", b"bytes")
        with pytest.raises(InvalidStateError, match="not confirmed"):
            await facade.restores.create(ada, pending.id, TARGET, S3_KEYS)
        await facade.artifacts.confirm(ada, run.id)
        await confirmed_artifact(facade, ada, backup.id, b"second")
        await facade.artifacts.delete(ada, pending.id)
        with pytest.raises(ConflictError, match="deleted"):
            await facade.restores.create(ada, pending.id, TARGET, S3_KEYS)

    async def test_both_permissions_are_needed(self, facade: Strongroom) -> None:
        """``backups:write`` alone or ``artifacts:download`` alone: 403 naming the other."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        writer = await api_key(facade, ada, ["backups:write"])
        with pytest.raises(MissingPermissionError, match="artifacts:download"):
            await facade.restores.create(writer, artifact.id, TARGET, S3_KEYS)
        downloader = await api_key(facade, ada, ["artifacts:download", "artifacts:read"])
        with pytest.raises(MissingPermissionError, match="backups:write"):
            await facade.restores.create(downloader, artifact.id, TARGET, S3_KEYS)
        both = await api_key(facade, ada, ["artifacts:download", "backups:write"])
        restore = await facade.restores.create(both, artifact.id, TARGET, S3_KEYS)
        assert await facade.restores.get(downloader, restore.id) == restore
        events = await audit_events(facade, ada, "restore.create")
        assert sorted(e.outcome.value for e in events) == ["denied", "denied", "success"]

    @pytest.mark.parametrize(
        ("state", "allowed"), [(BillingState.STOPPED, True), (BillingState.BLOCKED, False)]
    )
    async def test_billing_gates_a_restore_as_a_write(
        self, facade: Strongroom, state: BillingState, allowed: bool
    ) -> None:
        """A stopped workspace may still restore (its data is what it is owed); a blocked
        one may not. Reading a restore is never refused."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        earlier = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        await facade.workspaces.set_billing_state(wid, state)
        if allowed:
            await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        else:
            with pytest.raises(BillingRestrictedError, match=state.value):
                await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        assert await facade.restores.get(ada, earlier.id) == earlier

    async def test_another_workspace_sees_nothing(self, facade: Strongroom) -> None:
        """Another workspace's artifact and restore are 404, exactly as random ids."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Other")
        artifact = await s3_artifact(facade, ada)
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        for restore_id in (restore.id, uuid4()):
            with pytest.raises(NotFoundError, match="restore"):
                await facade.restores.get(bob, restore_id)
        for artifact_id in (artifact.id, uuid4()):
            with pytest.raises(NotFoundError, match="artifact"):
                await facade.restores.create(bob, artifact_id, TARGET, S3_KEYS)


class TestRunner:
    """The service-side runner."""

    async def test_a_queued_restore_runs_and_succeeds(
        self, facade: Strongroom, targets: RecordingTargets
    ) -> None:
        """The artifact's exact bytes reach the target with the opened credentials; the
        restore ends ``succeeded`` with its credentials erased, audited by ``system``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada, b"the archive bytes")
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        [done] = await RestoreRunner(facade.restores).run_queued()
        assert targets.restored == [(TARGET, b"the archive bytes", S3_KEYS)]
        assert (done.id, done.state, done.error) == (restore.id, RestoreState.SUCCEEDED, None)
        assert done.finished_at is not None
        stored = await facade.restores.get(ada, restore.id)
        assert stored == done
        assert stored.sealed_credentials is None
        [event] = await audit_events(facade, ada, "restore.finish")
        assert event.actor == SYSTEM_ACTOR
        assert event.changes is not None
        assert event.changes["state"].after == "succeeded"
        assert await RestoreRunner(facade.restores).run_queued() == []

    async def test_a_failure_is_recorded_with_its_reason(
        self, facade: Strongroom, targets: RecordingTargets
    ) -> None:
        """The target's refusal becomes the restore's ``error``; credentials erased."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        targets.failure = "the target bucket refused the restore: AccessDenied"
        await RestoreRunner(facade.restores).run_queued()
        failed = await facade.restores.get(ada, restore.id)
        assert (failed.state, failed.error) == (RestoreState.FAILED, targets.failure)
        assert failed.sealed_credentials is None
        [event] = await audit_events(facade, ada, "restore.finish")
        assert event.changes is not None
        assert event.changes["error"].after == targets.failure

    async def test_an_object_gone_from_storage_fails_the_restore(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """The artifact's object missing from storage: ``failed``, saying so."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        storage.object_path(artifact.object_key).unlink()
        await RestoreRunner(facade.restores).run_queued()
        failed = await facade.restores.get(ada, restore.id)
        assert failed.state is RestoreState.FAILED
        assert failed.error is not None
        assert "missing" in failed.error

    async def test_concurrent_runners_run_each_restore_once(
        self, facade: Strongroom, targets: RecordingTargets
    ) -> None:
        """Four runners at once over six queued restores: each runs exactly once."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        created = [
            await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS) for _ in range(6)
        ]
        results = await asyncio.gather(
            *(RestoreRunner(facade.restores).run_queued() for _ in range(4))
        )
        ran = sorted(str(r.id) for batch in results for r in batch)
        assert ran == sorted(str(r.id) for r in created)
        assert len(targets.restored) == 6

    async def test_a_runner_stopped_mid_restore_records_it_as_interrupted(
        self, facade: Strongroom, targets: RecordingTargets
    ) -> None:
        """Cancelling the runner (the service stopping) fails the restore saying so,
        instead of leaving it ``running`` forever."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        restore = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
        targets.hold = asyncio.Event()
        runner = asyncio.create_task(RestoreRunner(facade.restores).run_queued())
        await asyncio.wait_for(targets.started.wait(), 5)
        assert (await facade.restores.get(ada, restore.id)).state is RestoreState.RUNNING
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
        stopped = await facade.restores.get(ada, restore.id)
        assert stopped.state is RestoreState.FAILED
        assert stopped.error is not None
        assert "interrupted" in stopped.error
        assert stopped.sealed_credentials is None


ROUTE = "POST /v1/artifacts/restores"


class TestIdempotency:
    """A restore asked again under the same ``Idempotency-Key`` (contract 8): a client's
    retry after a lost answer gets the first restore and writes into the target once."""

    async def test_a_repeat_returns_the_first_restore_and_restores_once(
        self, facade: Strongroom, targets: RecordingTargets, clock: ManualClock
    ) -> None:
        """The repeat (an hour later) is the first restore as first answered, without the
        sealed credentials (the key does not keep them); one ``restore.create``; the runner
        writes into the target once."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        key = IdempotencyKey("retry-1", ROUTE, "request-1")
        first = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        clock.advance(timedelta(hours=1))
        again = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        assert again == attrs.evolve(first, sealed_credentials=None)
        assert len(await audit_events(facade, ada, "restore.create")) == 1
        [done] = await RestoreRunner(facade.restores).run_queued()
        assert done.id == first.id
        assert len(targets.restored) == 1
        late = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        assert late.state is RestoreState.QUEUED
        assert await RestoreRunner(facade.restores).run_queued() == []

    async def test_the_same_key_for_another_request_is_a_conflict(
        self, facade: Strongroom, targets: RecordingTargets
    ) -> None:
        """Another request under a used key: ``IdempotencyConflictError``, nothing queued."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        await facade.restores.create(
            ada, artifact.id, TARGET, S3_KEYS, idempotency=IdempotencyKey("k", ROUTE, "one")
        )
        with pytest.raises(IdempotencyConflictError):
            await facade.restores.create(
                ada, artifact.id, TARGET, S3_KEYS, idempotency=IdempotencyKey("k", ROUTE, "two")
            )
        assert len(await RestoreRunner(facade.restores).run_queued()) == 1
        assert len(await audit_events(facade, ada, "restore.create")) == 1

    async def test_a_key_expires_after_24_hours(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A day later the key is free again: the same request queues a new restore."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        key = IdempotencyKey("k", ROUTE, "one")
        first = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        clock.advance(timedelta(hours=24, seconds=1))
        later = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        assert later.id != first.id
        assert len(await audit_events(facade, ada, "restore.create")) == 2

    async def test_a_replay_outlives_a_block(self, facade: Strongroom) -> None:
        """As for every create (docs/decisions/idempotency.md): the replay of a restore made
        before the workspace was blocked answers the restore, and queues nothing more."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        artifact = await s3_artifact(facade, ada)
        key = IdempotencyKey("k", ROUTE, "one")
        first = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        again = await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS, idempotency=key)
        assert again.id == first.id
        with pytest.raises(BillingRestrictedError):
            await facade.restores.create(ada, artifact.id, TARGET, S3_KEYS)
