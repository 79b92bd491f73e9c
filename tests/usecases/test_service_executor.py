"""Cloud runs executed by the service (contract 11), through the facade on the in-memory
adapters. The sources here are fakes of the source port (the lifecycle is what is under
test); the readers themselves run against real SeaweedFS and PostgreSQL in
tests/integration/test_cloud_executor.py."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.executor import Executor
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import DEFAULT_PART_SIZE, ArtifactState, Verification
from strongroom.domain.backups import BackupChanges, BackupKind, PostgresSource, S3Source
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import ConflictError, InvalidStateError, MissingPermissionError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller, PrincipalType
from strongroom.domain.runs import RunState
from strongroom.ports.driven.sources import SourceError
from strongroom.ports.driving import Strongroom
from support.people import api_key, audit_events, retention, workspace_admin

SECRET = "s3cr3t-Value-that-must-never-leak"


class FakeReaders:
    """A source port whose streams the test scripts: bytes, a failure, or a wait."""

    def __init__(self, content: bytes = b"", error: str | None = None) -> None:
        self.content = content
        self.error = error
        self.block = False
        self.opened: list[Mapping[str, str]] = []
        self.closed = 0
        self.reading = asyncio.Event()

    def read(
        self, source: S3Source | PostgresSource, credentials: Mapping[str, str]
    ) -> AsyncIterator[bytes]:
        self.opened.append(dict(credentials))
        return self._stream()

    async def _stream(self) -> AsyncIterator[bytes]:
        try:
            self.reading.set()
            for start in range(0, len(self.content), 1 << 20):
                yield self.content[start : start + (1 << 20)]
                await asyncio.sleep(0)
            if self.block:
                await asyncio.Event().wait()
            if self.error is not None:
                raise SourceError(self.error)
        finally:
            self.closed += 1


async def worker_of(facade: Strongroom, admin: Caller) -> Caller:
    """A worker of the admin's workspace: its caller."""
    issued = await facade.workers.create(admin, "rack")
    return await facade.access.authenticate(issued.token)


async def local_backup(facade: Strongroom, admin: Caller, worker: Caller, name: str) -> UUID:
    """An active local backup assigned to ``worker``."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.LOCAL)
    changes = BackupChanges(worker_id=worker.worker_id, retention=retention("P30D", "PT0S"))
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


async def cloud_backup(facade: Strongroom, admin: Caller, name: str = "Orders DB") -> UUID:
    """An active cloud backup of a PostgreSQL source, its credentials sealed."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.CLOUD)
    changes = BackupChanges(
        source=PostgresSource("db.example.com", 5432, "orders"),
        credentials={"username": "backup", "password": SECRET},
        retention=retention("P30D", "P1D"),
    )
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


def executor(facade: Strongroom, readers: FakeReaders, **options: float) -> Executor:
    return Executor(
        facade.service_runs,
        readers,
        concurrency=int(options.get("concurrency", 2)),
        poll=0.01,
        heartbeat_every=options.get("heartbeat_every", 0.05),
    )


class TestClaim:
    """The service claims cloud runs, and only those, as ``system``."""

    async def test_a_cloud_run_is_claimed_by_the_service_with_a_lease(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Running, no worker, leased; audited ``run.claim`` by ``system``; local runs are
        left to their worker."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "Local"))
        run = await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        held = await facade.service_runs.claim()
        assert held is not None
        assert held.run.id == run.id
        assert (held.run.state, held.run.worker_id) == (RunState.RUNNING, None)
        assert held.run.lease_expires_at == clock.now() + timedelta(seconds=60)
        assert await facade.service_runs.claim() is None
        (event,) = await audit_events(facade, ada, "run.claim")
        assert (event.actor.type, event.actor.id) == (PrincipalType.SYSTEM, None)
        assert (await facade.claims.claim(rack)) is not None  # the local run stays the worker's

    async def test_concurrent_service_claims_take_each_run_once(self, facade: Strongroom) -> None:
        """Six claimers, two queued cloud runs: each run once."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        queued = {
            (await facade.runs.trigger(ada, await cloud_backup(facade, ada, f"B{i}"))).id
            for i in range(2)
        }
        results = await asyncio.gather(*(facade.service_runs.claim() for _ in range(6)))
        assert sorted(r.run.id for r in results if r is not None) == sorted(queued)


class TestExecution:
    """One run, from claim to its end."""

    async def test_a_run_streams_its_source_into_a_confirmed_artifact(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """More than one part: a multipart upload joined at confirm; the artifact is
        available with the stream's size and sha256, locked per the retention; the
        credentials reached the reader only."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup_id = await cloud_backup(facade, ada)
        run = await facade.runs.trigger(ada, backup_id)
        content = os.urandom(DEFAULT_PART_SIZE + 12345)
        readers = FakeReaders(content)
        held = await facade.service_runs.claim()
        assert held is not None
        finished = await executor(facade, readers).execute(held)
        assert finished is not None
        assert (finished.state, finished.artifact_count, finished.bytes) == (
            RunState.SUCCEEDED,
            1,
            len(content),
        )
        assert readers.opened == [{"username": "backup", "password": SECRET}]
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(10))
        (artifact,) = page.items
        assert artifact.state is ArtifactState.AVAILABLE
        assert artifact.sha256 == hashlib.sha256(content).hexdigest()
        assert artifact.name == f"Orders-DB-{run.created_at:%Y%m%dT%H%M%SZ}.pgdump"
        assert artifact.locked_until is not None
        assert storage.object_path(artifact.object_key).read_bytes() == content
        actions = [(e.action, e.actor.type) for e in await audit_events(facade, ada)]
        for action in ("run.claim", "artifact.create", "run.confirm"):
            assert (action, PrincipalType.SYSTEM) in actions
        assert SECRET not in repr(await audit_events(facade, ada))

    async def test_a_small_stream_is_stored_in_one_request(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """An empty source gives an empty, available artifact."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        held = await facade.service_runs.claim()
        assert held is not None
        finished = await executor(facade, FakeReaders(b"")).execute(held)
        assert finished is not None
        assert (finished.state, finished.bytes) == (RunState.SUCCEEDED, 0)

    async def test_a_failing_source_fails_the_run_and_aborts_its_upload(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """The reader's message becomes the run's error; the partial artifact is deleted
        and its multipart upload is gone."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        readers = FakeReaders(os.urandom(DEFAULT_PART_SIZE + 1), error="source postgres: boom")
        held = await facade.service_runs.claim()
        assert held is not None
        ended = await executor(facade, readers).execute(held)
        assert ended is not None
        assert (ended.state, ended.error) == (RunState.FAILED, "source postgres: boom")
        assert (await facade.runs.get(ada, run.id)).error == "source postgres: boom"
        deleted = await facade.artifacts.list_in(ada, ada.scoped_workspace(), True, PageRequest(5))
        assert [a.state for a in deleted.items] == [ArtifactState.DELETED]
        assert not list((storage.root / "uploads").glob("*/info.json"))
        assert readers.closed == 1
        (event,) = await audit_events(facade, ada, "run.fail")
        assert event.actor.type is PrincipalType.SYSTEM

    async def test_a_cancel_stops_the_run_within_one_heartbeat(self, facade: Strongroom) -> None:
        """The reader is closed and the run is ``cancelled``; nothing was confirmed."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        readers = FakeReaders(b"partial")
        readers.block = True
        held = await facade.service_runs.claim()
        assert held is not None
        execution = asyncio.ensure_future(executor(facade, readers).execute(held))
        await readers.reading.wait()
        await facade.runs.cancel(ada, run.id)
        ended = await asyncio.wait_for(execution, timeout=2)
        assert ended is not None
        assert ended.state is RunState.CANCELLED
        assert readers.closed == 1
        assert (await facade.runs.get(ada, run.id)).state is RunState.CANCELLED
        events = await audit_events(facade, ada, "run.cancel")  # the request, then its effect
        assert sorted(e.actor.type for e in events) == [PrincipalType.SYSTEM, PrincipalType.USER]

    async def test_a_run_whose_lease_expired_is_given_up(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Requeued meanwhile (attempt 2): the executor stops without touching it."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        readers = FakeReaders(b"x")
        readers.block = True
        held = await facade.service_runs.claim()
        assert held is not None
        execution = asyncio.ensure_future(executor(facade, readers).execute(held))
        await readers.reading.wait()
        clock.advance(timedelta(seconds=61))
        await facade.leases.expire()
        assert await asyncio.wait_for(execution, timeout=2) is None
        again = await facade.runs.get(ada, run.id)
        assert (again.state, again.attempt) == (RunState.QUEUED, 2)
        retry = await facade.service_runs.claim()
        assert retry is not None
        finished = await executor(facade, FakeReaders(b"second")).execute(retry)
        assert finished is not None
        assert finished.state is RunState.SUCCEEDED
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(5))
        assert [a.size for a in page.items] == [6]  # the first attempt's record, taken over

    async def test_a_blocked_workspace_fails_the_run_at_confirm(self, facade: Strongroom) -> None:
        """Uploads are refused in ``blocked``: the run fails with the billing message."""
        ada, workspace_id = await workspace_admin(facade, "ada@example.com")
        await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        held = await facade.service_runs.claim()
        assert held is not None
        await facade.workspaces.set_billing_state(workspace_id, BillingState.BLOCKED)
        ended = await executor(facade, FakeReaders(b"data")).execute(held)
        assert ended is not None
        assert ended.state is RunState.FAILED
        assert ended.error is not None
        assert "blocked" in ended.error


class TestLoop:
    """The executor's loop: bounded concurrency, clean stop."""

    async def test_at_most_the_configured_runs_at_once_and_a_stop_releases_them(
        self, facade: Strongroom
    ) -> None:
        """Three blocked runs, two executors: two running, one queued; a stop leaves the
        two running to their lease (nothing failed)."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        runs = [
            await facade.runs.trigger(ada, await cloud_backup(facade, ada, f"B{i}"))
            for i in range(3)
        ]
        readers = FakeReaders(b"x")
        readers.block = True
        loop = executor(facade, readers, concurrency=2)
        stop = asyncio.Event()
        task = asyncio.ensure_future(loop.run(stop))
        for _ in range(100):
            await asyncio.sleep(0.02)
            if loop.active == 2:
                break
        await asyncio.sleep(0.1)
        states = sorted([(await facade.runs.get(ada, r.id)).state.value for r in runs])
        assert states == ["queued", "running", "running"]
        stop.set()
        await asyncio.wait_for(task, timeout=2)
        assert loop.active == 0
        assert readers.closed == 2
        states = sorted([(await facade.runs.get(ada, r.id)).state.value for r in runs])
        assert states == ["queued", "running", "running"]


class TestVerifyRequest:
    """``POST /v1/artifacts/{aid}/verify``."""

    async def test_a_request_makes_the_verifier_re_read_the_artifact(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Pending at once; ``ok`` after the verifier; then ``mismatch`` once the bytes
        changed; audited by the caller and by ``system``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        held = await facade.service_runs.claim()
        assert held is not None
        await executor(facade, FakeReaders(b"payload")).execute(held)
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(5))
        (artifact,) = page.items
        requested = await facade.artifacts.request_verification(ada, artifact.id)
        assert requested.verification is Verification.PENDING
        await facade.verification.run()
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(5))
        assert page.items[0].verification is Verification.OK
        storage.object_path(artifact.object_key).write_bytes(b"tampered")
        await facade.artifacts.request_verification(ada, artifact.id)
        await facade.verification.run()
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(5))
        assert page.items[0].verification is Verification.MISMATCH
        actors = [e.actor.type for e in await audit_events(facade, ada, "artifact.verify")]
        assert sorted(actors) == sorted([PrincipalType.USER, PrincipalType.SYSTEM] * 2)

    async def test_refusals(self, facade: Strongroom, storage: LocalDiskStorage) -> None:
        """``artifacts:read`` is needed; a pending artifact: ``invalid_state``; a deleted
        one: ``conflict``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        await facade.runs.trigger(ada, await cloud_backup(facade, ada))
        held = await facade.service_runs.claim()
        assert held is not None
        readers = FakeReaders(b"x")
        readers.block = True
        execution = asyncio.ensure_future(executor(facade, readers).execute(held))
        await readers.reading.wait()
        await asyncio.sleep(0.05)
        page = await facade.artifacts.list_in(ada, ada.scoped_workspace(), False, PageRequest(5))
        (pending,) = page.items
        with pytest.raises(InvalidStateError):
            await facade.artifacts.request_verification(ada, pending.id)
        key = await api_key(facade, ada, ["backups:read"])
        with pytest.raises(MissingPermissionError):
            await facade.artifacts.request_verification(key, pending.id)
        await facade.runs.cancel(ada, held.run.id)
        await asyncio.wait_for(execution, timeout=2)
        deleted = await facade.artifacts.list_in(ada, ada.scoped_workspace(), True, PageRequest(5))
        with pytest.raises(ConflictError):
            await facade.artifacts.request_verification(ada, deleted.items[0].id)
