"""Retention's agreement (contract 15) on the in-memory, SQLite and PostgreSQL adapters: the
job removes exactly the artifacts of the runs the explain endpoint lists as expiring, keeps
held, locked, referenced and newest runs, and the explain endpoint then lists only what
was kept. The repository's reads of retention are checked on each adapter too."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from contract_records import Adapter

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind, RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.errors import RetentionImmutableError
from strongroom.domain.keep_rules import KeepRules, Verdict
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.ports.driving import Strongroom
from support.people import active_manual, audit_events, upload, workspace_admin
from support.world import blocking_call, memory_facade

START = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)
RULES = KeepRules(last=2, hourly=3, daily=3, weekly=2)


async def explained(facade: Strongroom, caller: Caller, backup_id: UUID) -> list[Verdict]:
    """Every page of the explain endpoint, three runs a page."""
    verdicts: list[Verdict] = []
    page = PageRequest(3)
    while True:
        found = await facade.retention.explain(caller, backup_id, page)
        verdicts.extend(found.items)
        if found.next_cursor is None:
            return verdicts
        page = PageRequest(3, found.next_cursor)


async def artifacts_of(facade: Strongroom, caller: Caller, deleted: bool) -> list[Artifact]:
    listed = await facade.artifacts.list_in(
        caller, caller.scoped_workspace(), deleted, PageRequest(200)
    )
    return list(listed.items)


async def history(
    facade: Strongroom,
    storage: LocalDiskStorage,
    clock: ManualClock,
    caller: Caller,
    backup_id: UUID,
    seed: int,
) -> list[UUID]:
    """Runs at irregular times over three weeks, one or two artifacts each: their ids."""
    chance = random.Random(seed)
    runs = []
    for number in range(24):
        run = await facade.runs.start(caller, backup_id)
        for part in range(chance.choice([1, 2])):
            content = f"{seed}-{number}-{part}".encode()
            await upload(facade, storage, caller, run.id, f"part-{part}", content)
        await facade.artifacts.confirm(caller, run.id)
        runs.append(run.id)
        clock.advance(timedelta(minutes=chance.choice([20, 90, 300, 1440, 2880])))
    return runs


async def agreement(adapter: Adapter, tmp_path: Path, seed: int) -> None:
    clock = ManualClock(START)
    storage = LocalDiskStorage(tmp_path / "objects", b"retention", clock=clock.now)
    facade = memory_facade(clock, storage=storage, uow=adapter.async_uow)
    ada, _ = await workspace_admin(facade, "ada@example.com")
    backup_id = await active_manual(facade, ada, expire_after="P1D", lock_for="PT0S")
    policy = RetentionPolicy(Duration.parse("P1D"), Duration.parse("PT0S"), RULES)
    with pytest.raises(RetentionImmutableError):
        await facade.backups.update(ada, backup_id, BackupChanges(retention=policy))
    backup_id = await keep_ruled(facade, ada)
    runs = await history(facade, storage, clock, ada, backup_id, seed)
    # The oldest run is held; the third oldest is referenced by the newest (a snapshot).
    [held] = (await artifacts_in(facade, ada, runs[0]))[:1]
    await facade.holds.artifact(ada, held.id, True)
    referenced = await artifacts_in(facade, ada, runs[2])
    async with facade.deps.uow() as uow:
        await uow.retention.add_references(
            ada.scoped_workspace(), runs[-1], [a.id for a in referenced]
        )
        await uow.commit()
    clock.advance(timedelta(days=2))

    before = await explained(facade, ada, backup_id)
    expiring = {v.run_id for v in before if not v.keep}
    kept = {v.run_id for v in before if v.keep}
    assert [v.finished_at for v in before] == sorted((v.finished_at for v in before), reverse=True)
    assert before[0].reasons[0] == "newest"
    reasons = {v.run_id: v.reasons for v in before}
    assert "held" in reasons[runs[0]]
    assert "referenced" in reasons[runs[2]]
    assert expiring, "the history has runs the rules give up"
    available = {a.id: a.run_id for a in await artifacts_of(facade, ada, False)}

    report = await facade.retention.run()

    gone = await artifacts_of(facade, ada, True)
    assert {a.run_id for a in gone} == expiring
    assert {a.id for a in gone} == {aid for aid, run in available.items() if run in expiring}
    assert (report.removed, report.failed) == (len(gone), 0)
    for artifact in gone:
        assert storage._meta(artifact.object_key) is None
    for run_id in expiring:
        emptied = await facade.runs.get(ada, run_id)
        assert (emptied.artifact_count, emptied.bytes) == (0, 0)
    for run_id in kept:
        assert (await facade.runs.get(ada, run_id)).artifact_count >= 1
    removals = await audit_events(facade, ada, "artifact.delete")
    assert len(removals) == len(gone)
    assert {event.actor for event in removals} == {SYSTEM_ACTOR}
    after = await explained(facade, ada, backup_id)
    assert {v.run_id for v in after} == kept
    assert all(v.keep for v in after)
    assert (await facade.retention.run()).removed == 0


async def keep_ruled(facade: Strongroom, caller: Caller) -> UUID:
    """A manual backup whose policy has keep rules."""
    created = await facade.backups.create(
        caller, caller.scoped_workspace(), "Ruled", BackupKind.MANUAL
    )
    policy = RetentionPolicy(Duration.parse("P1D"), Duration.parse("PT0S"), RULES)
    await facade.backups.update(caller, created.id, BackupChanges(retention=policy))
    return created.id


async def artifacts_in(facade: Strongroom, caller: Caller, run_id: UUID) -> list[Artifact]:
    async with facade.deps.uow() as uow:
        found = await uow.artifacts.list_for_run(caller.scoped_workspace(), run_id)
    return [a for a in found if a.state is ArtifactState.AVAILABLE]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_job_removes_exactly_what_the_explain_endpoint_lists_as_expiring(
    adapter: Adapter, tmp_path: Path, seed: int
) -> None:
    """Agreement of the explain endpoint and the job, with a held and a referenced run."""
    blocking_call(agreement(adapter, tmp_path, seed))


def test_retention_reads(adapter: Adapter, tmp_path: Path) -> None:
    """ruled_backups, finished_runs, available_artifacts and references on each adapter."""

    async def scenario() -> None:
        clock = ManualClock(START)
        storage = LocalDiskStorage(tmp_path / "objects", b"retention", clock=clock.now)
        facade = memory_facade(clock, storage=storage, uow=adapter.async_uow)
        ada, wid = await workspace_admin(facade, "ada@example.com")
        plain = await active_manual(facade, ada)
        ruled = await keep_ruled(facade, ada)
        first = await facade.runs.start(ada, ruled)
        stored = await upload(facade, storage, ada, first.id, "a", b"a")
        await facade.artifacts.confirm(ada, first.id)
        second = await facade.runs.start(ada, plain)
        async with facade.deps.uow() as uow:
            assert await uow.retention.ruled_backups() == [(wid, ruled)]
            assert await uow.retention.finished_runs(wid, ruled) == [(first.id, START)]
            assert await uow.retention.finished_runs(wid, plain) == []
            [found] = await uow.retention.available_artifacts(wid, ruled)
            assert (found.id, found.run_id, found.held) == (stored.id, first.id, False)
            assert await uow.retention.references(wid, ruled) == {}
            await uow.retention.add_references(wid, second.id, [stored.id, stored.id])
            await uow.commit()
        async with facade.deps.uow() as uow:
            assert await uow.retention.references(wid, plain) == {second.id: frozenset({stored.id})}
            assert sorted(await uow.retention.ruled_backups()) == sorted(
                [(wid, ruled), (wid, plain)]
            )

    blocking_call(scenario())
