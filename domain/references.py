"""References between snapshots (contract section 14).

A snapshot stores only the chunks no live snapshot of its backup holds; the rest it
declares as ``references`` to earlier runs' artifacts (packs). These rules keep referenced
packs: a reference must name an artifact of an earlier run of the same backup that still
exists; a referenced pack takes on the referencing run's lock (extended, never shortened);
and a pack is collected only once no live snapshot references it, its own run is no
longer live, its lock has passed and it is not held.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Protocol, TypeVar
from uuid import UUID

import attrs

from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.errors import InvalidStateError, NotFoundError

# A confirm names at most this many referenced artifacts (packs of tens of MiB: 100 000
# packs are several TiB of unchanged data).
MAX_REFERENCES = 100_000


def check_references(
    run_id: UUID, backup_id: UUID, named: Iterable[UUID], found: Mapping[UUID, Artifact]
) -> tuple[Artifact, ...]:
    """The artifacts a confirm's ``references`` name, in the order named, each once.

    ``found`` holds what the store found of them in the caller's workspace: one it did not
    find, or of another backup, or of the confirming run itself, is unknown (404); a
    deleted one, or one never confirmed, is 409 ``invalid_state``."""
    chosen: dict[UUID, Artifact] = {}
    for artifact_id in named:
        artifact = found.get(artifact_id)
        if artifact is None or artifact.backup_id != backup_id or artifact.run_id == run_id:
            raise NotFoundError(f"referenced artifact {artifact_id}")
        if artifact.state is not ArtifactState.AVAILABLE:
            raise InvalidStateError(f"referenced artifact {artifact_id} is {artifact.state}")
        chosen.setdefault(artifact_id, artifact)
    if len(chosen) > MAX_REFERENCES:
        raise InvalidStateError(f"a snapshot references at most {MAX_REFERENCES} artifacts")
    return tuple(chosen.values())


def extended_lock(artifact: Artifact, until: datetime | None) -> Artifact:
    """The referenced artifact locked at least ``until`` (the referencing run's lock)."""
    if until is None or (artifact.locked_until is not None and artifact.locked_until >= until):
        return artifact
    return attrs.evolve(artifact, locked_until=until)


def run_lock(retention: RetentionPolicy, now: datetime) -> datetime | None:
    """The lock of a run confirmed at ``now``, the one its artifacts take (None when the
    policy locks nothing)."""
    if retention.lock_for.seconds <= 0:
        return None
    return now + timedelta(seconds=retention.lock_for.seconds)


def to_extend(referenced: Iterable[Artifact], until: datetime | None) -> list[Artifact]:
    """The referenced artifacts whose lock the referencing run extends, as extended."""
    changed = []
    for artifact in referenced:
        extended = extended_lock(artifact, until)
        if extended is not artifact:
            changed.append(extended)
    return changed


def live_referrers(available: Mapping[UUID, int]) -> frozenset[UUID]:
    """The runs among those referencing an artifact (``available``: run -> its number of
    available artifacts) that are live. For now a run is live while it keeps an available
    artifact; the retention rules (``keep_rules.explain``) make liveness precise."""
    return frozenset(run_id for run_id, count in available.items() if count > 0)


def referenced_by_live(
    references: Mapping[UUID, frozenset[UUID]], live_runs: Iterable[UUID]
) -> frozenset[UUID]:
    """The artifacts that some live run references (``references``: run -> artifact ids)."""
    return frozenset(
        artifact_id for run in live_runs for artifact_id in references.get(run, frozenset())
    )


class Collectable(Protocol):
    """What collection reads of an artifact (an ``Artifact``, or the fewer columns the
    retention decision reads: ``retention_plan.StoredArtifact``)."""

    @property
    def id(self) -> UUID: ...

    @property
    def run_id(self) -> UUID: ...

    @property
    def state(self) -> ArtifactState: ...

    @property
    def locked_until(self) -> datetime | None: ...

    @property
    def held(self) -> bool: ...

    def is_locked(self, now: datetime) -> bool: ...


C = TypeVar("C", bound=Collectable)


def collectable(
    artifacts: Iterable[C],
    live_runs: frozenset[UUID],
    referenced: frozenset[UUID],
    held: frozenset[UUID],
    now: datetime,
) -> list[C]:
    """The available artifacts garbage collection removes now: of runs that are no longer
    live, referenced by no live run, not held, past their lock."""
    spared = referenced | held
    return [
        artifact
        for artifact in artifacts
        if artifact.state is ArtifactState.AVAILABLE
        and artifact.run_id not in live_runs
        and not (spared and artifact.id in spared)
        and not artifact.is_locked(now)
    ]
