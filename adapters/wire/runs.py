"""Runs: starting one, its progress, the heartbeat and the failure of its holder."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain import runs as domain_runs
from strongroom.domain.references import MAX_REFERENCES


@attrs.frozen
class RunCreate:
    """`POST /v1/runs`."""

    backup_id: UUID
    """A manual backup."""


@attrs.frozen
class ConfirmRequest:
    """`POST /v1/runs/{run_id}/confirm` (the body is optional)."""

    references: list[UUID] = attrs.field(
        factory=list, metadata=meta(schema={"maxItems": MAX_REFERENCES})
    )
    """Artifacts of earlier runs of the same backup that this run's snapshot uses (packs it
    did not upload again): each is locked at least as long as this run and cannot be deleted
    while this run is live."""


@view_of(domain_runs.Progress)
@attrs.frozen
class ProgressShape:
    """How far a running run's holder says it got, as of its last heartbeat."""

    __schema_name__: ClassVar[str] = "Progress"
    bytes_done: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes processed so far."""
    bytes_total: int | None = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes to process, when the holder knows."""
    message: str | None = attrs.field(
        metadata=meta(schema={"maxLength": domain_runs.MAX_PROGRESS_MESSAGE})
    )
    """What the holder is doing, in its own words."""
    updated_at: datetime
    """The heartbeat that reported it."""


@view_of(domain_runs.Run)
@attrs.frozen
class Run:
    """One execution of a backup."""

    __location__: ClassVar[str] = "/v1/runs/{id}"

    id: UUID
    backup_id: UUID
    workspace_id: UUID
    state: domain_runs.RunState
    """`running` from `POST /v1/runs`, `queued` from `trigger`; `succeeded` once `confirm` found
    every announced artifact; `cancelled` by `cancel` (a queued run at once)."""
    trigger: domain_runs.RunTrigger
    """`manual` (`POST /v1/runs`), `api` (`trigger`) or `schedule`."""
    worker_id: UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    artifact_count: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """The run's `available` artifacts."""
    bytes: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Total size of the run's `available` artifacts."""
    error: str | None
    """Why a `failed` run failed: the `error` its holder or client reported, `lease expired`
    after the last attempt, or `abandoned` for a manual run left 24 h with pending uploads
    (their uploads aborted); null otherwise."""
    attempt: int = attrs.field(
        metadata=meta(
            f"1-based; a run whose lease expired is queued again with `attempt + 1`, up to "
            f"{domain_runs.MAX_ATTEMPTS}.",
            schema={"minimum": 1},
        )
    )
    lease_expires_at: datetime | None
    """When the holder's lease runs out; null unless the run is claimed."""
    cancel_requested: bool
    """A cancel of the `running` run was asked for; it becomes `cancelled` when its holder next
    heartbeats or fails, or its lease expires."""
    progress: domain_runs.Progress | None
    """What the run's holder last reported; null before any report."""

    @property
    def finished(self) -> bool:
        """Whether the run reached a final state."""
        return self.state in domain_runs.FINISHED_STATES


@attrs.frozen
class ProgressReport:
    """How far the holder got."""

    bytes_done: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes processed so far."""
    bytes_total: int | None = attrs.field(
        default=None, metadata=meta(schema={"minimum": 0}, optional=True)
    )
    """Bytes to process, when known."""
    message: str | None = attrs.field(
        default=None,
        metadata=meta(schema={"maxLength": domain_runs.MAX_PROGRESS_MESSAGE}, optional=True),
    )
    """What the holder is doing."""


@attrs.frozen
class HeartbeatRequest:
    """`POST /v1/runs/{run_id}/heartbeat`."""

    progress: ProgressReport | None = attrs.field(default=None, metadata=meta(optional=True))
    """Recorded on the run as of this heartbeat."""


@attrs.frozen
class Heartbeat:
    """The run's lease after a heartbeat."""

    lease_expires_at: datetime | None
    """The extended lease; null once the run was cancelled."""
    cancel_requested: bool
    """The run was cancelled: the holder stops its work now."""


@attrs.frozen
class FailRequest:
    """`POST /v1/runs/{run_id}/fail`."""

    error: str = attrs.field(
        metadata=meta(schema={"minLength": 1, "maxLength": domain_runs.MAX_ERROR})
    )
    """What went wrong, in the holder's words."""
