"""Snapshots under forget, expiry and collection (issue 28, contract 14): a hypothesis state
machine backs up snapshots made of chunks (each chunk stored in one pack; a snapshot
uploads only the chunks no available pack holds and references the rest), forgets
snapshots (``forget``: every artifact of the run, the manifest first, refusals kept),
lets time pass and runs the retention job, which collects what no live snapshot
references. After every step:

- every snapshot whose manifest is still available is restorable: every pack it names is
  available and its stored object holds the pack's bytes, whichever earlier snapshots
  were forgotten, expired and collected;
- the newest snapshot, unless forgotten, keeps its manifest;
- a collected or deleted artifact's object is gone from storage;
- run on the in-memory adapter, SQLite and PostgreSQL side by side (one clock), the
  adapters agree on every outcome: each forget's deletions and refusals, each job's
  counts, and every artifact's state and lock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import pytest
from contract_records import Adapter, MemoryAdapter
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.blocking import blocking_call
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind, KeepRules, RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.encryption import Encryption
from strongroom.domain.errors import ConflictError
from strongroom.domain.principals import Caller
from strongroom.ports.driving import Strongroom
from support.people import upload, workspace_admin
from support.world import memory_facade

CHUNKS = "abcdef"
RECIPIENTS = Encryption(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"])
START = datetime(2030, 1, 2, 12, tzinfo=UTC)

# A logical artifact, the same on every adapter: (snapshot number, artifact name).
Key = tuple[int, str]


def pack_bytes(chunk: str) -> bytes:
    return f"pack of chunk {chunk}".encode() * 8


def manifest_bytes(number: int, chunks: frozenset[str]) -> bytes:
    return f"manifest {number}: {''.join(sorted(chunks))}".encode()


@attrs.define
class Stack:
    """One adapter behind a facade, a storage directory, a person and their backup."""

    name: str
    facade: Strongroom
    storage: LocalDiskStorage
    caller: Caller | None = None
    backup_id: UUID | None = None
    ids: dict[Key, UUID] = attrs.field(factory=dict)

    def call(self, coroutine: Any) -> Any:
        return blocking_call(coroutine)

    def artifact(self, key: Key) -> Artifact:
        assert self.caller is not None
        found = self.call(self._get(self.ids[key]))
        assert found is not None, (self.name, key)
        return found  # type: ignore[no-any-return]

    async def _get(self, artifact_id: UUID) -> Artifact | None:
        assert self.caller is not None
        async with self.facade.deps.uow() as uow:
            return await uow.artifacts.get(self.caller.scoped_workspace(), artifact_id)

    def states(self) -> dict[Key, tuple[str, Any]]:
        out = {}
        for key in self.ids:
            found = self.artifact(key)
            out[key] = (found.state.value, found.locked_until)
        return out

    def stored(self, artifact: Artifact) -> bytes | None:
        reader = self.storage.open_object(artifact.object_key)
        if reader is None:
            return None
        try:
            return reader.read()
        finally:
            reader.close()


@attrs.frozen
class Snapshot:
    number: int
    chunks: frozenset[str]
    # chunk -> the pack (logical key) the snapshot reads it from.
    packs: dict[str, Key]


class SnapshotCollection(RuleBasedStateMachine):
    def __init__(self, stacks: list[Stack], clock: ManualClock) -> None:
        super().__init__()
        self.stacks = stacks
        self.clock = clock
        self.snapshots: list[Snapshot] = []
        self.forgotten: set[int] = set()

    @initialize(
        expire_hours=st.sampled_from([1, 24, 72]),
        lock_hours=st.sampled_from([0, 1, 12]),
        keep_last=st.sampled_from([0, 0, 1, 2]),
    )
    def backup_with_retention(self, expire_hours: int, lock_hours: int, keep_last: int) -> None:
        policy = RetentionPolicy(
            Duration(seconds=expire_hours * 3600),
            Duration(seconds=min(lock_hours, expire_hours) * 3600),
            KeepRules(last=keep_last) if keep_last else None,
        )
        note(f"retention: {policy}")
        for stack in self.stacks:
            stack.caller, workspace_id = stack.call(
                workspace_admin(stack.facade, "ada@example.com")
            )
            backup = stack.call(
                stack.facade.backups.create(
                    stack.caller, workspace_id, "Home", BackupKind.MANUAL, encryption=RECIPIENTS
                )
            )
            stack.call(
                stack.facade.backups.update(
                    stack.caller, backup.id, BackupChanges(retention=policy)
                )
            )
            stack.backup_id = backup.id

    def _available_packs(self, stack: Stack) -> dict[str, Key]:
        """chunk -> the first available pack holding it, as the client's catalog finds."""
        found: dict[str, Key] = {}
        for key in sorted(stack.ids):
            name = key[1]
            if name.startswith("pack-") and stack.artifact(key).state is ArtifactState.AVAILABLE:
                found.setdefault(name.removeprefix("pack-"), key)
        return found

    @rule(chunks=st.frozensets(st.sampled_from(CHUNKS), min_size=1, max_size=4))
    def backup(self, chunks: frozenset[str]) -> None:
        number = len(self.snapshots)
        self.clock.advance(timedelta(minutes=1))  # a backup takes a while: no two at once
        plans = []
        for stack in self.stacks:
            catalog = self._available_packs(stack)
            plans.append({chunk: catalog.get(chunk) for chunk in sorted(chunks)})
        assert all(plan == plans[0] for plan in plans), plans
        needed = {
            chunk: key if key is not None else (number, f"pack-{chunk}")
            for chunk, key in plans[0].items()
        }
        for stack in self.stacks:
            assert stack.caller is not None
            assert stack.backup_id is not None
            run = stack.call(stack.facade.runs.start(stack.caller, stack.backup_id))
            contents = {"manifest": manifest_bytes(number, chunks)}
            contents |= {
                key[1]: pack_bytes(chunk) for chunk, key in needed.items() if key[0] == number
            }
            for name, data in contents.items():
                made = stack.call(
                    upload(stack.facade, stack.storage, stack.caller, run.id, name, data)
                )
                stack.ids[(number, name)] = made.id
            references = [stack.ids[key] for key in needed.values() if key[0] != number]
            confirmed = stack.call(stack.facade.artifacts.confirm(stack.caller, run.id, references))
            assert confirmed.state.value == "succeeded"
        self.snapshots.append(Snapshot(number, chunks, needed))

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        number = data.draw(st.sampled_from([s.number for s in self.snapshots]), label="snapshot")
        outcomes = []
        for stack in self.stacks:
            assert stack.caller is not None
            names = sorted(
                (name for (n, name) in stack.ids if n == number),
                key=lambda name: (name != "manifest", name),
            )
            outcome = []
            for name in names:
                artifact = stack.artifact((number, name))
                if artifact.state is not ArtifactState.AVAILABLE:
                    continue
                try:
                    stack.call(stack.facade.artifacts.delete(stack.caller, artifact.id))
                    outcome.append((name, "deleted"))
                except ConflictError as error:
                    outcome.append((name, error.code))
            outcomes.append(outcome)
        note(f"forget {number}: {outcomes[0]}")
        assert all(outcome == outcomes[0] for outcome in outcomes), outcomes
        if ("manifest", "deleted") in outcomes[0]:
            self.forgotten.add(number)

    @rule(hours=st.integers(1, 80))
    def time_passes(self, hours: int) -> None:
        self.clock.advance(timedelta(hours=hours))

    @rule()
    def collect(self) -> None:
        reports = []
        for stack in self.stacks:
            report = stack.call(stack.facade.retention.run())
            reports.append((report.removed, report.kept_last, report.kept_locked, report.failed))
        note(f"collect: {reports[0]}")
        assert reports[0][3] == 0, "the job failed on nothing"
        assert all(report == reports[0] for report in reports), reports

    @invariant()
    def every_snapshot_with_its_manifest_restores(self) -> None:
        for stack in self.stacks:
            for snapshot in self.snapshots:
                manifest = stack.artifact((snapshot.number, "manifest"))
                if manifest.state is not ArtifactState.AVAILABLE:
                    continue
                assert stack.stored(manifest) == manifest_bytes(snapshot.number, snapshot.chunks)
                for chunk, key in snapshot.packs.items():
                    pack = stack.artifact(key)
                    assert pack.state is ArtifactState.AVAILABLE, (stack.name, snapshot, chunk)
                    assert stack.stored(pack) == pack_bytes(chunk), (stack.name, snapshot, key)

    @invariant()
    def the_newest_snapshot_stays_unless_forgotten(self) -> None:
        if not self.snapshots or self.snapshots[-1].number in self.forgotten:
            return
        for stack in self.stacks:
            newest = stack.artifact((self.snapshots[-1].number, "manifest"))
            assert newest.state is ArtifactState.AVAILABLE, stack.name

    @invariant()
    def what_is_deleted_is_gone_from_storage(self) -> None:
        for stack in self.stacks:
            for key in stack.ids:
                artifact = stack.artifact(key)
                if artifact.state is ArtifactState.DELETED:
                    assert stack.stored(artifact) is None, (stack.name, key)

    @invariant()
    def the_adapters_agree(self) -> None:
        states = [stack.states() for stack in self.stacks]
        assert all(state == states[0] for state in states), states


def _stacks(adapters: list[Adapter], root: Path, clock: ManualClock) -> list[Stack]:
    stacks = []
    for adapter in adapters:
        storage = LocalDiskStorage(root / adapter.name, b"snapshot machine", clock=clock.now)
        facade = memory_facade(clock, uow=adapter.async_uow, storage=storage)
        stacks.append(Stack(adapter.name, facade, storage))
    return stacks


def test_snapshots_survive_forget_expiry_and_collection_in_memory(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    def machine() -> SnapshotCollection:
        clock = ManualClock(START)
        root = tmp_path_factory.mktemp("collection")
        return SnapshotCollection(_stacks([MemoryAdapter()], root, clock), clock)

    run_state_machine_as_test(
        machine,  # type: ignore[arg-type]
        settings=settings(max_examples=60, stateful_step_count=30, deadline=None),
    )


@pytest.mark.slow
def test_the_sql_adapters_agree_with_memory_on_collection(
    fresh_adapters: Callable[[], list[Adapter]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    def machine() -> SnapshotCollection:
        clock = ManualClock(START)
        root = tmp_path_factory.mktemp("collection")
        return SnapshotCollection(_stacks(fresh_adapters(), root, clock), clock)

    run_state_machine_as_test(
        machine,  # type: ignore[arg-type]
        settings=settings(max_examples=15, stateful_step_count=20, deadline=None),
    )
