"""Runs: start a manual run, read, list and cancel runs, trigger a local or cloud backup."""

from __future__ import annotations

from uuid import UUID

from strongroom.adapters.webkit.context import ApiContext
from strongroom.adapters.webkit.declare import Paged, Routes, parameter
from strongroom.adapters.wire.runs import Run, RunCreate
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Page
from strongroom.domain.runs import Run as DomainRun
from strongroom.domain.runs import RunState
from strongroom.ports.driving import IdempotencyKey, Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.runs import CANCEL_RUN, READ_RUN, START_RUN, TRIGGER_BACKUP

routes = Routes("Runs and artifacts")
backups = routes.tagged("Backups")


@routes.create("/v1/runs", Run, "The new run.", START_RUN, billing="runs")
async def start_run(
    facade: Strongroom, grant: Grant, body: RunCreate, idempotency: IdempotencyKey | None
) -> DomainRun:
    """Start a manual run

    A manual backup's client starts a run (state `running`, trigger `manual`); it then
    asks for upload URLs and confirms. Local and cloud backups get their runs from
    `trigger` or the scheduler.

    Errors:
    - `not_found`: no such backup in the caller's workspace
    - `validation_failed`: the backup is not manual
    - `invalid_state`: the backup is a draft or paused"""
    return await facade.runs.start(grant, body.backup_id, idempotency=idempotency)


@routes.get("/v1/runs/{run_id}", Run, "The run.", READ_RUN)
async def get_run(facade: Strongroom, grant: Grant, run_id: UUID) -> DomainRun:
    """Read a run

    One run of the caller's workspace."""
    return await facade.runs.get(grant, run_id)


@routes.get(
    "/v1/backups/{bid}/runs",
    Paged(Run),
    "One page of runs.",
    READ_RUN,
    parameters=(
        parameter(
            "state",
            "query",
            "Only the runs in this state.",
            {"type": "string", "enum": [state.value for state in RunState]},
        ),
    ),
)
async def list_runs(ctx: ApiContext, grant: Grant, bid: UUID) -> Page[DomainRun]:
    """List a backup's runs

    The backup's runs, newest first; only those in one state with `?state=`. Never
    refused for billing.

    Errors:
    - `invalid_request`: `state` is not a run state"""
    state = run_state(ctx.request.query_params.get("state"))
    return await ctx.facade.runs.list_for_backup(grant, bid, state, ctx.page())


def run_state(raw: str | None) -> RunState | None:
    """The ``?state=`` filter: a run state, or none (400 ``invalid_request`` otherwise)."""
    if raw is None:
        return None
    try:
        return RunState(raw)
    except ValueError as error:
        states = ", ".join(state.value for state in RunState)
        raise InvalidRequestError(f"state must be one of {states} (or left out)") from error


@routes.action("/v1/runs/{run_id}/cancel", Run, "The run, cancelled or asked to stop.", CANCEL_RUN)
async def cancel_run(facade: Strongroom, grant: Grant, run_id: UUID) -> DomainRun:
    """Cancel a run

    A `queued` run becomes `cancelled` at once; a `running` one gets `cancel_requested:
    true` and becomes `cancelled` when its holder next heartbeats or fails, or its lease
    expires. Never refused for billing.

    Errors:
    - `invalid_state`: the run is finished (succeeded, failed or cancelled)"""
    return await facade.runs.cancel(grant, run_id)


@backups.action(
    "/v1/backups/{bid}/trigger",
    Run,
    "The queued run.",
    TRIGGER_BACKUP,
    status=202,
    idempotent=True,
    billing="runs",
)
async def trigger_backup(
    facade: Strongroom, grant: Grant, bid: UUID, idempotency: IdempotencyKey | None
) -> DomainRun:
    """Trigger a backup

    Enqueues a run of an active, unpaused local or cloud backup (state `queued`, trigger
    `api`); its worker or the service takes it.

    Errors:
    - `validation_failed`: the backup is manual (its client starts runs)
    - `invalid_state`: the backup is a draft or paused"""
    return await facade.runs.trigger(grant, bid, idempotency=idempotency)
