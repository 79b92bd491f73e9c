"""References between snapshots (contract 14): what a confirm may reference, the locks a
reference extends, and what garbage collection may take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.errors import (
    ArtifactLockedError,
    ArtifactReferencedError,
    ConflictError,
    InvalidStateError,
    LastArtifactError,
    NotFoundError,
)
from strongroom.domain.references import (
    check_references,
    collectable,
    extended_lock,
    live_referrers,
    referenced_by_live,
    run_lock,
    to_extend,
)

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
BACKUP = UUID(int=1)


def pack(run_id: UUID, *, backup_id: UUID = BACKUP, **changes: object) -> Artifact:
    artifact = Artifact(
        id=uuid4(),
        workspace_id=UUID(int=9),
        backup_id=backup_id,
        run_id=run_id,
        name="pack-0001",
        size=32 << 20,
        sha256="0" * 64,
        state=ArtifactState.AVAILABLE,
        storage=ArtifactStorage.SERVICE,
        object_key="k",
        created_at=NOW - timedelta(days=10),
    )
    return attrs.evolve(artifact, **changes)


class TestConfirmReferences:
    def test_earlier_packs_of_the_same_backup_are_taken_once_in_order(self) -> None:
        first, second = pack(uuid4()), pack(uuid4())
        named = [second.id, first.id, second.id]
        found = {first.id: first, second.id: second}
        assert check_references(uuid4(), BACKUP, named, found) == (second, first)

    def test_unknown_foreign_or_own_packs_are_not_found(self) -> None:
        run = uuid4()
        foreign = pack(uuid4(), backup_id=UUID(int=2))
        own = pack(run)
        for artifact_id, found in [
            (uuid4(), {}),
            (foreign.id, {foreign.id: foreign}),
            (own.id, {own.id: own}),
        ]:
            with pytest.raises(NotFoundError):
                check_references(run, BACKUP, [artifact_id], found)

    @pytest.mark.parametrize("state", [ArtifactState.DELETED, ArtifactState.PENDING])
    def test_deleted_or_unconfirmed_packs_are_an_invalid_state(self, state: ArtifactState) -> None:
        gone = pack(uuid4(), state=state)
        with pytest.raises(InvalidStateError):
            check_references(uuid4(), BACKUP, [gone.id], {gone.id: gone})


class TestLocks:
    @given(
        st.one_of(st.none(), st.integers(-(10**6), 10**6)),
        st.one_of(st.none(), st.integers(-(10**6), 10**6)),
    )
    def test_a_reference_extends_a_lock_and_never_shortens_it(
        self, current: int | None, wanted: int | None
    ) -> None:
        def at(seconds: int | None) -> datetime | None:
            return None if seconds is None else NOW + timedelta(seconds=seconds)

        artifact = pack(uuid4(), locked_until=at(current))
        after = extended_lock(artifact, at(wanted)).locked_until
        if current is not None:
            assert after is not None
            assert after >= NOW + timedelta(seconds=current)
        if wanted is not None:
            assert after is not None
            assert after >= NOW + timedelta(seconds=wanted)
        assert after in (at(current), at(wanted))


class TestCollection:
    def test_only_unreferenced_unheld_unlocked_packs_of_dead_runs_go(self) -> None:
        live_run, dead_run = uuid4(), uuid4()
        kept_live = pack(live_run)
        referenced = pack(dead_run)
        held = pack(dead_run)
        locked = pack(dead_run, locked_until=NOW + timedelta(days=1))
        gone = pack(dead_run)
        deleted = pack(dead_run, state=ArtifactState.DELETED)
        references = {live_run: frozenset({referenced.id})}
        live = frozenset({live_run})
        chosen = collectable(
            [kept_live, referenced, held, locked, gone, deleted],
            live,
            referenced_by_live(references, live),
            frozenset({held.id}),
            NOW,
        )
        assert chosen == [gone]

    @given(st.data())
    def test_nothing_a_live_run_references_is_ever_collected(self, data: st.DataObject) -> None:
        runs = [uuid4() for _ in range(data.draw(st.integers(1, 6)))]
        packs = [
            pack(data.draw(st.sampled_from(runs))) for _ in range(data.draw(st.integers(0, 12)))
        ]
        references = {
            run: frozenset(p.id for p in packs if data.draw(st.booleans())) for run in runs
        }
        live = frozenset(r for r in runs if data.draw(st.booleans()))
        referenced = referenced_by_live(references, live)
        chosen = collectable(packs, live, referenced, frozenset(), NOW)
        for artifact in chosen:
            assert artifact.run_id not in live
            assert all(artifact.id not in references[run] for run in live)


class TestReferencingRunLock:
    """The lock a confirm gives the artifacts it references (contract 14)."""

    def test_the_runs_lock_is_its_lock_for_from_now_and_none_without_one(self) -> None:
        seven_days = RetentionPolicy(Duration.parse("P30D"), Duration.parse("P7D"))
        assert run_lock(seven_days, NOW) == NOW + timedelta(days=7)
        unlocked = RetentionPolicy(Duration.parse("P30D"), Duration.parse("PT0S"))
        assert run_lock(unlocked, NOW) is None

    def test_only_shorter_locks_are_extended_and_returned(self) -> None:
        until = NOW + timedelta(days=7)
        shorter = pack(uuid4(), locked_until=NOW + timedelta(days=1))
        unlocked = pack(uuid4(), locked_until=None)
        longer = pack(uuid4(), locked_until=NOW + timedelta(days=9))
        extended = to_extend([shorter, longer, unlocked], until)
        assert [(a.id, a.locked_until) for a in extended] == [
            (shorter.id, until),
            (unlocked.id, until),
        ]
        assert to_extend([shorter], None) == []


class TestLiveReferrers:
    """Which referencing runs keep an artifact from deletion, for now."""

    def test_a_referencing_run_is_live_while_it_keeps_an_available_artifact(self) -> None:
        kept, emptied = uuid4(), uuid4()
        assert live_referrers({kept: 3, emptied: 0}) == frozenset({kept})
        assert live_referrers({}) == frozenset()


class TestDeletePrecedence:
    """conflict, artifact_locked, artifact_referenced, last_artifact (contract 14)."""

    def test_each_refusal_comes_in_the_contracts_order(self) -> None:
        locked = pack(uuid4(), locked_until=NOW + timedelta(days=1))
        free = pack(uuid4(), locked_until=NOW - timedelta(days=1))
        with pytest.raises(ConflictError) as deleted:
            locked.deleted().ensure_deletable(NOW, 1, referenced=True)
        assert deleted.value.code == "conflict"
        with pytest.raises(ArtifactLockedError):
            locked.ensure_deletable(NOW, 1, referenced=True)
        with pytest.raises(ArtifactReferencedError):
            free.ensure_deletable(NOW, 1, referenced=True)
        with pytest.raises(LastArtifactError):
            free.ensure_deletable(NOW, 1)
        free.ensure_deletable(NOW, 2)
