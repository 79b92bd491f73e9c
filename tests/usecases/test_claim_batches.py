"""Long polls that arrive together (issue 32): their credentials are checked, and their
first looks made, in batches (one statement for many claims); each claimer still gets only
a run of its own worker, a claimer gone meanwhile gets none, and a credential revoked
while its claim waits claims nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from uuid import UUID

import pytest

from strongroom.adapters.memory.backup_repositories import MemoryRunRepository
from strongroom.adapters.signals import InProcessRunSignals
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.errors import UnauthenticatedError
from strongroom.domain.principals import Caller
from strongroom.domain.runs import RunState
from strongroom.ports.driving import Bearer, Strongroom, claims
from support.people import audit_events, retention, workspace_admin


async def local_backup(facade: Strongroom, admin: Caller, worker_id: UUID, name: str) -> UUID:
    """An active local backup assigned to the worker."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.LOCAL)
    changes = BackupChanges(worker_id=worker_id, retention=retention("P30D", "PT0S"))
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


@pytest.fixture
def slow_looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each look at the queue takes 20 ms, as a database's round trip does (the in-memory
    store answers at once, so nothing would come while one is in flight); the number of
    claims of each look, in order."""
    sizes: list[int] = []
    looked = MemoryRunRepository.workers_with_queued

    async def slow(
        self: MemoryRunRepository, waiting: Collection[tuple[UUID, UUID]]
    ) -> set[tuple[UUID, UUID]]:
        sizes.append(len(waiting))
        await asyncio.sleep(0.02)
        return await looked(self, waiting)

    monkeypatch.setattr(MemoryRunRepository, "workers_with_queued", slow)
    return sizes


async def test_claims_looking_together_each_get_only_a_run_of_their_worker(
    facade: Strongroom, slow_looks: list[int]
) -> None:
    """Four long polls each of three workers arrive at once, with two runs queued for the
    first worker and one for the second: they look in batches (fewer looks than claims),
    the first worker's claimers get its two runs, the second's its one, the third's none,
    and no run goes to a claimer of another worker."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    issued = [await facade.workers.create(ada, name) for name in ("rack", "shelf", "tray")]
    rack, shelf, tray = (worker.worker.id for worker in issued)
    queued = {
        (await facade.runs.trigger(ada, await local_backup(facade, ada, owner, name))).id: owner
        for owner, name in ((rack, "One"), (rack, "Two"), (shelf, "Three"))
    }
    claimers = [worker for worker in issued for _ in range(4)]
    results = await asyncio.gather(
        *(facade.claims.claim(Bearer(str(worker.token)), 1) for worker in claimers)
    )
    got: dict[UUID, list[UUID]] = {rack: [], shelf: [], tray: []}
    for worker, result in zip(claimers, results, strict=True):
        if result is not None:
            assert queued[result.run.id] == worker.worker.id == result.backup.worker_id
            got[worker.worker.id].append(result.run.id)
    assert sorted(map(len, got.values())) == [0, 1, 2]
    assert (len(got[rack]), len(got[shelf]), len(got[tray])) == (2, 1, 0)
    assert max(slow_looks) > 1
    assert len(slow_looks) < len(claimers)


async def test_a_claimer_gone_during_its_look_gets_no_run(
    facade: Strongroom, slow_looks: list[int]
) -> None:
    """The claimer was there when its claim began to look and is gone when the look
    finds its run: nothing is claimed (no ``run.claim``, no ``run.requeue``), the run stays queued
    for the next claim."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    rack = await facade.workers.create(ada, "rack")
    run = await facade.runs.trigger(ada, await local_backup(facade, ada, rack.worker.id, "One"))
    connected = True

    async def still_there() -> bool:
        return connected

    claim = asyncio.ensure_future(facade.claims.claim(Bearer(str(rack.token)), 30, still_there))
    await asyncio.sleep(0.01)  # its look takes 20 ms
    assert slow_looks == [1]
    connected = False
    assert await asyncio.wait_for(claim, 5) is None
    assert (await facade.runs.get(ada, run.id)).state is RunState.QUEUED
    assert await audit_events(facade, ada, "run.claim") == []
    assert await audit_events(facade, ada, "run.requeue") == []
    claimed = await facade.claims.claim(Bearer(str(rack.token)))
    assert claimed is not None
    assert claimed.run.id == run.id


async def test_a_credential_rotated_while_its_claim_waits_claims_nothing(
    facade: Strongroom,
) -> None:
    """A worker's credential is rotated while a claim made with it waits: the run queued
    afterwards is not claimed with the old credential (401), and stays for the new one."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    rack = await facade.workers.create(ada, "rack")
    backup = await local_backup(facade, ada, rack.worker.id, "One")
    waiting = asyncio.ensure_future(facade.claims.claim(Bearer(str(rack.token)), 30))
    await asyncio.sleep(0.1)
    rotated = await facade.workers.rotate(ada, rack.worker.id)
    run = await facade.runs.trigger(ada, backup)
    with pytest.raises(UnauthenticatedError):
        await asyncio.wait_for(waiting, 5)
    assert (await facade.runs.get(ada, run.id)).state is RunState.QUEUED
    claimed = await facade.claims.claim(Bearer(str(rotated.token)))
    assert claimed is not None
    assert claimed.run.id == run.id


async def test_the_re_check_goes_on_after_the_claim_making_it_stops_waiting(
    facade: Strongroom, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One waiting claim makes the process's re-check; when it stops waiting another
    takes over: a run whose wake-up was lost, queued after the first claim ended, is
    still found long before the second claim's 30 s."""
    monkeypatch.setattr(claims, "SWEEP_SECONDS", 0.2)
    monkeypatch.setattr(InProcessRunSignals, "announce", lambda *_: None)
    ada, _ = await workspace_admin(facade, "ada@example.com")
    rack, shelf = [await facade.workers.create(ada, name) for name in ("rack", "shelf")]
    backup = await local_backup(facade, ada, shelf.worker.id, "Nightly")
    first = asyncio.ensure_future(facade.claims.claim(Bearer(str(rack.token)), 1))
    await asyncio.sleep(0.1)
    second = asyncio.ensure_future(facade.claims.claim(Bearer(str(shelf.token)), 30))
    assert await asyncio.wait_for(first, 5) is None
    run = await facade.runs.trigger(ada, backup)
    claimed = await asyncio.wait_for(second, 5)
    assert claimed is not None
    assert claimed.run.id == run.id
