"""What retention does to one backup now: every run's verdict (``keep_rules.explain``) and
the artifacts the job removes (``references.collectable``), from what the store holds.

The explain endpoint, the preview and the retention job all call :func:`plan`, so the job
removes exactly what the endpoint lists as expiring. A run counts while it has an
available artifact (one whose artifacts are all gone is no longer a snapshot to keep);
its lock is the latest of its artifacts' locks, it is held when one of them is held, and
it references the runs whose artifacts its snapshot names.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Generic, NamedTuple, TypeVar
from uuid import UUID

import attrs

from strongroom.domain.artifacts import ArtifactState, locked
from strongroom.domain.backups import Backup, RetentionPolicy
from strongroom.domain.keep_rules import Decision, RunFacts, Verdict, decide
from strongroom.domain.pagination import Cursor, Page, PageRequest
from strongroom.domain.references import C, Collectable, collectable, referenced_by_live


def zone_of(backup: Backup) -> tzinfo:
    """Where the keep rules count buckets: the schedule's time zone, else UTC."""
    if backup.schedule is None:
        return UTC
    return zoneinfo.ZoneInfo(backup.schedule.timezone)


class StoredArtifact(NamedTuple):
    """What the decision reads of one available artifact: its run, lock and hold."""

    id: UUID
    run_id: UUID
    locked_until: datetime | None
    held: bool
    state: ArtifactState = ArtifactState.AVAILABLE

    def is_locked(self, now: datetime) -> bool:
        """Whether it is inside its lock window (``Artifact.is_locked``)."""
        return locked(self.state, self.locked_until, now)


@attrs.frozen
class Plan(Generic[C]):
    """Every run's fate, newest first, and the artifacts to remove now."""

    decision: Decision
    doomed: Sequence[C]

    @property
    def verdicts(self) -> list[Verdict]:
        """Every run's verdict, newest first."""
        return self.decision.verdicts()

    @property
    def expiring(self) -> frozenset[UUID]:
        """The runs retention no longer keeps."""
        return self.decision.expiring

    def page(self, request: PageRequest) -> Page[Verdict]:
        """A page of the verdicts (``page_of_verdicts``), made only of the runs shown."""
        shown = page_of_verdicts(self.decision.ordered, request)
        return Page([self.decision.verdict(run) for run in shown.items], shown.next_cursor)


def plan(
    policy: RetentionPolicy,
    zone: tzinfo,
    finished: Iterable[tuple[UUID, datetime]],
    artifacts: Iterable[C],
    references: Mapping[UUID, frozenset[UUID]],
    now: datetime,
) -> Plan[C]:
    """Decide for a backup's succeeded runs (``finished``: id and finish time) from its
    ``artifacts`` (the available ones) and ``references`` (run -> artifact ids)."""
    by_run: dict[UUID, list[C]] = {}
    for artifact in artifacts:
        if artifact.state is ArtifactState.AVAILABLE:
            own = by_run.get(artifact.run_id)
            if own is None:
                by_run[artifact.run_id] = [artifact]
            else:
                own.append(artifact)
    run_of = {a.id: run_id for run_id, own in by_run.items() for a in own} if references else {}
    facts = []
    for run_id, finished_at in finished:
        own = by_run.get(run_id)
        if not own:
            continue
        named = references.get(run_id) if references else None
        facts.append(
            RunFacts(
                run_id,
                finished_at,
                *_lock_and_hold(own),
                frozenset(run_of[a] for a in named if a in run_of) - {run_id}
                if named
                else frozenset(),
            )
        )
    decision = decide(facts, policy.expire_after, policy.keep, zone, now)
    live = decision.kept
    kept = decision.reasons
    # The expiring runs' artifacts, newest run first.
    expiring = [a for run in decision.ordered if run.run_id not in kept for a in by_run[run.run_id]]
    doomed = collectable(
        expiring,
        live,
        referenced_by_live(references, live),
        frozenset(a.id for a in expiring if a.held),
        now,
    )
    return Plan(decision, doomed)


def _lock_and_hold(artifacts: Sequence[Collectable]) -> tuple[datetime | None, bool]:
    """A run's lock (the latest of its artifacts' locks) and whether one of them is held."""
    if len(artifacts) == 1:
        return artifacts[0].locked_until, artifacts[0].held
    locks = [a.locked_until for a in artifacts if a.locked_until is not None]
    return (max(locks) if locks else None), any(a.held for a in artifacts)


Dated = TypeVar("Dated", Verdict, RunFacts)


def page_of_verdicts(verdicts: Sequence[Dated], request: PageRequest) -> Page[Dated]:
    """A newest-first keyset page of ``verdicts`` (or of the runs, ordered as ``explain``
    gives them), the cursor holding the last run's finish time and id."""
    after = request.after
    chosen = [
        verdict
        for verdict in verdicts
        if after is None or (verdict.finished_at, verdict.run_id) < (after.created_at, after.id)
    ][: request.limit + 1]
    if len(chosen) <= request.limit:
        return Page(chosen, None)
    shown = chosen[: request.limit]
    return Page(shown, Cursor(shown[-1].finished_at, shown[-1].run_id))
