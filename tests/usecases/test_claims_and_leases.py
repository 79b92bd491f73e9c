"""The worker protocol through the facade (contract 11): claims (oldest first, exactly
once, long poll), heartbeats (lease, progress, cancels) and failures (pending artifacts
aborted), each audited."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.signals import InProcessRunSignals
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.errors import (
    ForbiddenError,
    InvalidRequestError,
    InvalidStateError,
    NotFoundError,
    QuotaExceededError,
    UnauthenticatedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import ABANDON_AFTER, LEASE, Progress, RunState
from strongroom.ports.driving import Bearer, Strongroom, claims
from strongroom.ports.driving.leases import LeaseReport
from support.people import (
    active_manual,
    api_key,
    audit_events,
    retention,
    upload,
    workspace_admin,
)

SECOND = timedelta(seconds=1)


async def worker_of(facade: Strongroom, admin: Caller, name: str = "rack") -> Caller:
    """A worker of the admin's workspace: its caller."""
    issued = await facade.workers.create(admin, name)
    return await facade.access.authenticate(issued.token)


async def local_backup(facade: Strongroom, admin: Caller, worker: Caller, name: str) -> UUID:
    """An active local backup assigned to ``worker``."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.LOCAL)
    changes = BackupChanges(worker_id=worker.worker_id, retention=retention("P30D", "PT0S"))
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


class TestClaim:
    """``POST /v1/claims``."""

    async def test_the_oldest_queued_run_is_claimed_with_a_lease(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Oldest first, running, held by the worker, leased 60 s; audited ``run.claim``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        first = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        clock.advance(SECOND)
        second = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "Two"))
        clock.advance(SECOND)
        claimed = await facade.claims.claim(rack)
        assert claimed is not None
        assert claimed.run.id == first.id
        assert claimed.backup.id == first.backup_id
        assert (claimed.run.state, claimed.run.worker_id) == (RunState.RUNNING, rack.worker_id)
        assert claimed.run.lease_expires_at == clock.now() + LEASE
        assert (await facade.runs.get(ada, first.id)) == claimed.run
        again = await facade.claims.claim(rack)
        assert again is not None
        assert again.run.id == second.id
        assert await facade.claims.claim(rack) is None
        events = await audit_events(facade, ada, "run.claim")
        assert [(e.actor.type, e.actor.id) for e in events] == [
            (PrincipalType.WORKER, rack.worker_id)
        ] * 2

    async def test_concurrent_claims_give_each_run_once(self, facade: Strongroom) -> None:
        """Eight claimers, three queued runs: three runs, each once, and five Nones."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        queued = {
            (await facade.runs.trigger(ada, await local_backup(facade, ada, rack, f"B{i}"))).id
            for i in range(3)
        }
        results = await asyncio.gather(*(facade.claims.claim(rack) for _ in range(8)))
        claimed = [result.run.id for result in results if result is not None]
        assert sorted(claimed) == sorted(queued)

    async def test_a_waiting_claim_takes_a_run_queued_meanwhile(self, facade: Strongroom) -> None:
        """A long poll picks up a run triggered while it waits."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup = await local_backup(facade, ada, rack, "Late")

        async def trigger_later() -> UUID:
            await asyncio.sleep(0.3)
            return (await facade.runs.trigger(ada, backup)).id

        claimed, run_id = await asyncio.gather(
            facade.claims.claim(rack, wait_seconds=2), trigger_later()
        )
        assert claimed is not None
        assert claimed.run.id == run_id

    async def test_a_run_for_another_worker_does_not_wake_a_waiting_claim(
        self, facade: Strongroom
    ) -> None:
        """Two workers of one workspace wait; a run of the first's backup is taken by the
        first, and the second's claim never looks again (it asks whether its claimer is
        still there only before and after a claim: never)."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack, shelf = await worker_of(facade, ada), await worker_of(facade, ada, "shelf")
        backup = await local_backup(facade, ada, rack, "Nightly")
        looks = {"rack": 0, "shelf": 0}

        def counted(name: str) -> Callable[[], Awaitable[bool]]:
            async def still_there() -> bool:
                looks[name] += 1
                return True

            return still_there

        racked = asyncio.ensure_future(facade.claims.claim(rack, 30, counted("rack")))
        shelved = asyncio.ensure_future(facade.claims.claim(shelf, 30, counted("shelf")))
        await asyncio.sleep(0.2)
        assert facade.claims.waiting() == 2
        run = await facade.runs.trigger(ada, backup)
        claimed = await asyncio.wait_for(racked, 5)
        assert claimed is not None
        assert claimed.run.id == run.id
        await asyncio.sleep(0.2)
        assert looks == {"rack": 2, "shelf": 0}
        assert not shelved.done()
        facade.claims.stop_waiting()
        assert await asyncio.wait_for(shelved, 5) is None
        assert facade.claims.waiting() == 0

    async def test_a_run_whose_wake_up_was_lost_is_found_by_the_re_check(
        self, facade: Strongroom, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No wake-up reaches the waiting claim (announcements lost); the process's
        periodic re-check finds the run and the claim takes it long before its 30 s."""
        monkeypatch.setattr(claims, "SWEEP_SECONDS", 0.2)
        monkeypatch.setattr(InProcessRunSignals, "announce", lambda *_: None)
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup = await local_backup(facade, ada, rack, "Nightly")
        waiting = asyncio.ensure_future(facade.claims.claim(rack, wait_seconds=30))
        await asyncio.sleep(0.3)
        run = await facade.runs.trigger(ada, backup)
        claimed = await asyncio.wait_for(waiting, 5)
        assert claimed is not None
        assert claimed.run.id == run.id

    async def test_stop_waiting_answers_waiting_claims_at_once(self, facade: Strongroom) -> None:
        """The server stops (``stop_waiting``, from another thread): two claims waiting
        30 s answer None at once, and a later claim does not wait either."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        await local_backup(facade, ada, rack, "Idle")
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = [asyncio.ensure_future(facade.claims.claim(rack, wait_seconds=30)) for _ in "ab"]
        await asyncio.sleep(0.3)
        assert not any(claim.done() for claim in waiting)
        stopper = threading.Thread(target=facade.claims.stop_waiting)
        stopper.start()
        assert await asyncio.wait_for(asyncio.gather(*waiting), 5) == [None, None]
        stopper.join()
        assert await asyncio.wait_for(facade.claims.claim(rack, wait_seconds=30), 5) is None
        assert loop.time() - started < 5

    async def test_a_claimer_gone_while_waiting_claims_nothing(self, facade: Strongroom) -> None:
        """A long poll whose claimer went away takes no run triggered afterwards: the run
        stays queued, and the next claim gets it on its first attempt."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        backup = await local_backup(facade, ada, rack, "Nightly")
        connected = True

        async def still_there() -> bool:
            return connected

        waiting = asyncio.ensure_future(facade.claims.claim(rack, 30, still_there))
        await asyncio.sleep(0.2)
        connected = False
        run = await facade.runs.trigger(ada, backup)
        assert await asyncio.wait_for(waiting, 5) is None
        assert (await facade.runs.get(ada, run.id)).state is RunState.QUEUED
        claimed = await facade.claims.claim(rack)
        assert claimed is not None
        assert (claimed.run.id, claimed.run.attempt) == (run.id, 1)

    async def test_a_run_claimed_for_a_claimer_gone_is_released_at_once(
        self, facade: Strongroom
    ) -> None:
        """The claimer is found gone once its run is claimed (the answer cannot reach
        it): the run is queued again at once, same attempt, audited ``run.requeue``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "Nightly"))
        looks = 0

        async def gone_after_the_first_look() -> bool:
            nonlocal looks
            looks += 1
            return looks == 1

        assert await facade.claims.claim(rack, 0, gone_after_the_first_look) is None
        released = await facade.runs.get(ada, run.id)
        assert (released.state, released.attempt, released.started_at) == (
            RunState.QUEUED,
            1,
            None,
        )
        (requeued,) = await audit_events(facade, ada, "run.requeue")
        assert requeued.actor.id == rack.worker_id
        claimed = await facade.claims.claim(rack)
        assert claimed is not None
        assert (claimed.run.id, claimed.run.attempt) == (run.id, 1)

    async def test_only_workers_claim(self, facade: Strongroom) -> None:
        """Persons and API keys: 403, even with every permission."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        key = await api_key(facade, ada, ["artifacts:upload"])
        for caller in (ada, key):
            with pytest.raises(ForbiddenError):
                await facade.claims.claim(caller)

    async def test_a_claim_checks_in_the_contracts_order(self, facade: Strongroom) -> None:
        """One call with the request's bearer: an unknown credential is 401, a person's
        or an API key's 403 before their body is read, then a bad ``wait_seconds`` 400."""

        def unread() -> int:
            raise AssertionError("the body is read only after the credential passed")

        ada, workspace_id = await workspace_admin(facade, "ada@example.com")
        issued_key = await facade.api_keys.create(ada, "robot", ["artifacts:upload"])
        issued_worker = await facade.workers.create(ada, "rack")
        person = await facade.sessions.switch(ada, workspace_id)
        with pytest.raises(UnauthenticatedError):
            await facade.claims.claim(Bearer("bkw_unknown"), unread)
        for token in (person.token, issued_key.token):
            with pytest.raises(ForbiddenError):
                await facade.claims.claim(Bearer(token), unread)
        with pytest.raises(InvalidRequestError):
            await facade.claims.claim(Bearer(issued_worker.token), lambda: 31)
        assert await facade.claims.claim(Bearer(issued_worker.token), lambda: 0) is None


class TestHeartbeatAndFail:
    """The holder's heartbeats and its failure report."""

    async def test_heartbeats_extend_the_lease_and_report_progress(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """The lease runs 60 s from the heartbeat; the progress is on the run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        await facade.claims.claim(rack)
        clock.advance(30 * SECOND)
        beaten = await facade.claims.heartbeat(rack, run.id, Progress(3, 9, "reading"))
        assert beaten.lease_expires_at == clock.now() + LEASE
        assert beaten.progress == Progress(3, 9, "reading", clock.now())
        assert await facade.runs.get(ada, run.id) == beaten

    async def test_only_the_holder_heartbeats(self, facade: Strongroom) -> None:
        """Another worker, a person, or the holder of a finished run: 404 / 409."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        other = await worker_of(facade, ada, "other")
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        with pytest.raises(NotFoundError):
            await facade.claims.heartbeat(rack, run.id)  # queued: not held yet
        await facade.claims.claim(rack)
        for caller in (other, ada):
            with pytest.raises(NotFoundError):
                await facade.claims.heartbeat(caller, run.id)
        await facade.runs.cancel(ada, run.id)
        cancelled = await facade.claims.heartbeat(rack, run.id)
        assert (cancelled.state, cancelled.cancel_requested) == (RunState.CANCELLED, True)
        with pytest.raises(InvalidStateError):
            await facade.claims.heartbeat(rack, run.id)

    async def test_a_failure_aborts_the_pending_artifacts(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """The run is failed with its error, its announced artifact deleted, audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        await facade.claims.claim(rack)
        await upload(facade, storage, rack, run.id, "part.bin", b"half")
        failed = await facade.claims.fail(rack, run.id, "disk full")
        assert (failed.state, failed.error) == (RunState.FAILED, "disk full")
        artifacts = (await facade.artifacts.list_in(ada, wid, True, PageRequest())).items
        assert [(a.run_id, a.state) for a in artifacts] == [(run.id, ArtifactState.DELETED)]
        assert [e.target_id for e in await audit_events(facade, ada, "run.fail")] == [str(run.id)]
        with pytest.raises(InvalidStateError):
            await facade.claims.fail(rack, run.id, "again")


class TestLeaseExpiry:
    """The lease job: requeue with ``attempt + 1`` up to three attempts, then fail."""

    async def test_an_expired_lease_requeues_then_fails_after_three_attempts(
        self, facade: Strongroom, clock: ManualClock, storage: LocalDiskStorage
    ) -> None:
        """Attempts 1 and 2 go back to the queue (their pending uploads aborted, the names
        kept for the next attempt); the third fails with ``lease expired``. Audited as
        ``system``: ``run.requeue`` twice, ``run.fail`` once."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        for attempt in (1, 2):
            claimed = await facade.claims.claim(rack)
            assert claimed is not None
            assert claimed.run.attempt == attempt
            await upload(facade, storage, rack, run.id, "part.bin", b"half")
            clock.advance(LEASE - SECOND)
            assert (await facade.leases.expire()).requeued == 0  # not yet
            clock.advance(SECOND)
            assert (await facade.leases.expire()).requeued == 1
            requeued = await facade.runs.get(ada, run.id)
            assert (requeued.state, requeued.attempt) == (RunState.QUEUED, attempt + 1)
            assert (requeued.worker_id, requeued.lease_expires_at) == (None, None)
        await facade.claims.claim(rack)
        clock.advance(LEASE)
        assert (await facade.leases.expire()).failed == 1
        failed = await facade.runs.get(ada, run.id)
        assert (failed.state, failed.error, failed.attempt) == (
            RunState.FAILED,
            "lease expired",
            3,
        )
        requeues = await audit_events(facade, ada, "run.requeue")
        fails = await audit_events(facade, ada, "run.fail")
        assert [e.actor.type for e in requeues + fails] == [PrincipalType.SYSTEM] * 3

    async def test_a_heartbeat_keeps_the_run_and_a_cancel_ends_it(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A run heartbeating in time keeps its lease; a cancel-requested run whose lease
        runs out is cancelled, not requeued."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "One"))
        await facade.claims.claim(rack)
        clock.advance(LEASE - SECOND)
        await facade.claims.heartbeat(rack, run.id)
        clock.advance(2 * SECOND)
        assert await facade.leases.expire() == LeaseReport()
        assert (await facade.runs.get(ada, run.id)).state is RunState.RUNNING
        await facade.runs.cancel(ada, run.id)
        clock.advance(LEASE)
        assert (await facade.leases.expire()).cancelled == 1
        assert (await facade.runs.get(ada, run.id)).state is RunState.CANCELLED


class TestOnlyTheHolderUploads:
    """Issue 27, finding 8: a claimed run takes artifacts and its confirm only from the
    worker holding it."""

    async def test_an_upload_key_cannot_announce_into_or_confirm_a_claimed_run(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """An API key with ``artifacts:upload`` (and ``artifacts:confirm``): 404 for the
        claimed run's upload URL and confirm, nothing announced; the holder uploads and
        confirms as before."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        rack = await worker_of(facade, ada)
        run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack, "Nightly"))
        assert await facade.claims.claim(rack) is not None
        key = await api_key(facade, ada, ["artifacts:upload", "artifacts:confirm"])
        with pytest.raises(NotFoundError):
            await facade.artifacts.upload_url(key, run.id, "intruder", 1, "0" * 64)
        with pytest.raises(NotFoundError):
            await facade.artifacts.confirm(key, run.id)
        await upload(facade, storage, rack, run.id, "archive", b"data")
        confirmed = await facade.artifacts.confirm(rack, run.id)
        assert (confirmed.state, confirmed.artifact_count) == (RunState.SUCCEEDED, 1)

    async def test_a_manual_run_takes_uploads_from_any_caller_allowed(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """A manual run keeps the spec's rule: an upload key announces and confirms."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(
            ada, ada.scoped_workspace(), "Laptop", BackupKind.MANUAL
        )
        await facade.backups.update(
            ada, backup.id, BackupChanges(retention=retention("P30D", "PT0S"))
        )
        run = await facade.runs.start(ada, backup.id)
        key = await api_key(facade, ada, ["artifacts:upload", "artifacts:confirm"])
        await upload(facade, storage, key, run.id, "archive", b"data")
        assert (await facade.artifacts.confirm(key, run.id)).state is RunState.SUCCEEDED


class TestAbandonedManualRuns:
    """Contract 13 (issue 27, finding 11): a manual run left ``running`` with pending
    uploads for 24 h is failed ("abandoned"), releasing the storage they reserved."""

    async def test_a_left_run_gives_its_reserved_bytes_back_after_a_day(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """A client announces 8 of a 10-byte quota and goes away: nothing more fits until
        a day after its last announcement; then the run is ``failed`` "abandoned" by
        ``system``, its partial object gone, and the 10 bytes fit again."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 10)
        backup = await active_manual(facade, ada)
        left = await facade.runs.start(ada, backup)
        clock.advance(timedelta(hours=1))
        pending = await upload(facade, storage, ada, left.id, "part.bin", b"eightbyt")
        assert await storage.stat(pending.object_key) is not None
        clock.advance(ABANDON_AFTER - SECOND)
        assert await facade.leases.expire() == LeaseReport()
        later = await facade.runs.start(ada, backup)
        with pytest.raises(QuotaExceededError, match="storage_bytes"):
            await facade.artifacts.upload_url(ada, later.id, "next.bin", 10, "ab" * 32)

        clock.advance(SECOND)
        assert await facade.leases.expire() == LeaseReport(abandoned=1)
        ended = await facade.runs.get(ada, left.id)
        assert (ended.state, ended.error) == (RunState.FAILED, "abandoned")
        assert await storage.stat(pending.object_key) is None
        gone = await facade.artifacts.get(ada, pending.id)
        assert gone.state is ArtifactState.DELETED
        await facade.artifacts.upload_url(ada, later.id, "next.bin", 10, "ab" * 32)
        (event,) = await audit_events(facade, ada, "run.fail")
        assert event.actor.type is PrincipalType.SYSTEM
        # The run that was not left (announced just now) stays open a day more.
        assert await facade.leases.expire() == LeaseReport()
        assert (await facade.runs.get(ada, later.id)).state is RunState.RUNNING

    async def test_a_run_without_pending_uploads_or_still_announcing_stays(
        self, facade: Strongroom, storage: LocalDiskStorage, clock: ManualClock
    ) -> None:
        """Nothing announced reserves nothing: such a run stays ``running``; neither does
        a run whose client announced again within the day."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        bare = await facade.runs.start(ada, backup)
        busy = await facade.runs.start(ada, backup)
        await upload(facade, storage, ada, busy.id, "one.bin", b"1")
        clock.advance(ABANDON_AFTER - SECOND)
        await upload(facade, storage, ada, busy.id, "two.bin", b"2")
        clock.advance(2 * SECOND)
        assert await facade.leases.expire() == LeaseReport()
        for run in (bare, busy):
            assert (await facade.runs.get(ada, run.id)).state is RunState.RUNNING
        await facade.artifacts.confirm(ada, busy.id)
