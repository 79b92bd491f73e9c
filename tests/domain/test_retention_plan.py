"""What retention removes from a backup (contract 15): only artifacts of runs the verdicts
give up, never a held, locked or referenced one, never the newest run's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.keep_rules import KeepRules
from strongroom.domain.pagination import PageRequest
from strongroom.domain.retention_plan import page_of_verdicts, plan

NOW = datetime(2030, 1, 2, 12, tzinfo=UTC)
WS, BACKUP = UUID(int=1), UUID(int=2)


def artifact(number: int, run: int, *, held: bool = False, locked: bool = False) -> Artifact:
    return Artifact(
        id=UUID(int=1000 + number),
        workspace_id=WS,
        backup_id=BACKUP,
        run_id=UUID(int=run),
        name=f"a{number}",
        size=1,
        sha256="0" * 64,
        state=ArtifactState.AVAILABLE,
        storage=ArtifactStorage.SERVICE,
        object_key=f"k{number}",
        created_at=NOW,
        locked_until=NOW + timedelta(hours=1) if locked else None,
        held=held,
    )


@st.composite
def backups(
    draw: st.DrawFn,
) -> tuple[list[tuple[UUID, datetime]], list[Artifact], dict[UUID, frozenset[UUID]]]:
    count = draw(st.integers(0, 25))
    runs = [
        (UUID(int=100 + n), NOW - timedelta(hours=draw(st.integers(0, 24 * 60))))
        for n in range(count)
    ]
    artifacts: list[Artifact] = []
    for run_id, _ in runs:
        for _ in range(draw(st.integers(0, 2))):
            artifacts.append(
                artifact(
                    len(artifacts),
                    run_id.int,
                    held=draw(st.integers(0, 9)) == 0,
                    locked=draw(st.integers(0, 9)) == 0,
                )
            )
    references: dict[UUID, frozenset[UUID]] = {}
    for run_id, _ in runs:
        if artifacts and draw(st.booleans()):
            named = draw(st.lists(st.sampled_from(artifacts), max_size=3))
            references[run_id] = frozenset(a.id for a in named)
    return runs, artifacts, references


policies = st.builds(
    RetentionPolicy,
    st.integers(3600, 30 * 86_400).map(Duration),
    st.just(Duration(0)),
    st.one_of(st.none(), st.builds(KeepRules, last=st.integers(0, 3), daily=st.integers(0, 5))),
)


@given(backups(), policies)
def test_only_artifacts_of_expiring_runs_go_and_never_a_protected_one(
    backup: tuple[list[tuple[UUID, datetime]], list[Artifact], dict[UUID, frozenset[UUID]]],
    policy: RetentionPolicy,
) -> None:
    runs, artifacts, references = backup
    decided = plan(policy, UTC, runs, artifacts, references, NOW)
    expiring = decided.expiring
    live = {v.run_id for v in decided.verdicts if v.keep}
    referenced = {a for run in live for a in references.get(run, frozenset())}
    for gone in decided.doomed:
        assert gone.run_id in expiring
        assert not gone.held
        assert not gone.is_locked(NOW)
        assert gone.id not in referenced
    # Every artifact of an expiring run goes (nothing protects it any more).
    assert {a.id for a in decided.doomed} == {
        a.id for a in artifacts if a.run_id in expiring and a.id not in referenced
    }
    with_artifacts = {a.run_id for a in artifacts}
    assert {v.run_id for v in decided.verdicts} == {r for r, _ in runs if r in with_artifacts}
    if decided.verdicts:
        assert decided.verdicts[0].keep


def test_a_run_of_a_held_or_locked_artifact_is_kept_whole() -> None:
    runs = [
        (UUID(int=1), NOW - timedelta(days=9)),
        (UUID(int=2), NOW - timedelta(days=8)),
        (UUID(int=3), NOW - timedelta(days=7)),
    ]
    artifacts = [
        artifact(1, 1, held=True),
        artifact(2, 1),
        artifact(3, 2, locked=True),
        artifact(4, 2),
        artifact(5, 3),
    ]
    decided = plan(RetentionPolicy(Duration(3600), Duration(0)), UTC, runs, artifacts, {}, NOW)
    reasons = {v.run_id: v.reasons for v in decided.verdicts}
    assert reasons[UUID(int=1)] == ("held",)
    assert reasons[UUID(int=2)][0].startswith("locked until")
    assert reasons[UUID(int=3)] == ("newest",)
    assert decided.doomed == []


def test_pages_follow_the_verdicts_order() -> None:
    runs = [(UUID(int=n), NOW - timedelta(hours=n)) for n in range(1, 6)]
    decided = plan(
        RetentionPolicy(Duration(3600), Duration(0)),
        UTC,
        runs,
        [artifact(n, n) for n in range(1, 6)],
        {},
        NOW,
    )
    first = page_of_verdicts(decided.verdicts, PageRequest(2))
    assert first.next_cursor is not None
    second = page_of_verdicts(decided.verdicts, PageRequest(3, first.next_cursor))
    assert second.next_cursor is None
    assert [*first.items, *second.items] == list(decided.verdicts)
