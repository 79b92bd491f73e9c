"""The outbox's writer: an event becomes one delivery per subscribed webhook, added to the
unit of work of the change that caused it (so both commit, or neither: contract 16)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

from strongroom.domain.artifacts import Artifact, Verification
from strongroom.domain.audit import JsonValue
from strongroom.domain.drills import Drill
from strongroom.domain.restores import Restore
from strongroom.domain.runs import Run, RunState
from strongroom.domain.timestamps import format_timestamp
from strongroom.domain.webhooks import Delivery, WebhookEvent
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies


def payload(event: WebhookEvent, at: datetime, data: Mapping[str, JsonValue]) -> str:
    """The body every receiver of ``event`` gets (Standard Webhooks' ``type``,
    ``timestamp``, ``data``)."""
    body = {"type": event.value, "timestamp": format_timestamp(at), "data": data}
    return json.dumps(body, separators=(",", ":"))


async def notify(
    deps: Dependencies,
    uow: UnitOfWork,
    workspace_id: UUID,
    event: WebhookEvent,
    data: Mapping[str, JsonValue],
) -> list[Delivery]:
    """Queue ``event`` for every webhook of the workspace that wants it, in ``uow``."""
    webhooks = await uow.webhooks.subscribed(workspace_id, event)
    if not webhooks:
        return []
    now = deps.clock.now()
    body = payload(event, now, data)
    queued = []
    for webhook in webhooks:
        delivery = Delivery(
            deps.ids.new_id(), webhook.id, workspace_id, event, body, now, next_attempt_at=now
        )
        await uow.webhooks.add_delivery(delivery)
        queued.append(delivery)
    return queued


def run_data(run_id: UUID, backup_id: UUID, state: str, error: str | None) -> dict[str, JsonValue]:
    """What ``run.succeeded`` and ``run.failed`` carry."""
    return {"run_id": str(run_id), "backup_id": str(backup_id), "state": state, "error": error}


async def notify_run(deps: Dependencies, uow: UnitOfWork, run: Run) -> None:
    """``run.succeeded`` or ``run.failed`` for a run that just finished so (nothing for
    another state: a cancelled or requeued run)."""
    event = {
        RunState.SUCCEEDED: WebhookEvent.RUN_SUCCEEDED,
        RunState.FAILED: WebhookEvent.RUN_FAILED,
    }
    chosen = event.get(run.state)
    if chosen is not None:
        data = run_data(run.id, run.backup_id, run.state.value, run.error)
        await notify(deps, uow, run.workspace_id, chosen, data)


async def notify_verification(deps: Dependencies, uow: UnitOfWork, artifact: Artifact) -> None:
    """``artifact.verification_failed`` for an artifact whose stored bytes are missing or
    differ from what was confirmed."""
    found = artifact.verification
    if found in (Verification.MISSING, Verification.MISMATCH):
        data: dict[str, JsonValue] = {
            "artifact_id": str(artifact.id),
            "backup_id": str(artifact.backup_id),
            "run_id": str(artifact.run_id),
            "verification": found.value,
        }
        await notify(
            deps, uow, artifact.workspace_id, WebhookEvent.ARTIFACT_VERIFICATION_FAILED, data
        )


async def notify_restore(deps: Dependencies, uow: UnitOfWork, restore: Restore) -> None:
    """``restore.finished`` for a restore that succeeded or failed."""
    data: dict[str, JsonValue] = {
        "restore_id": str(restore.id),
        "artifact_id": str(restore.artifact_id),
        "state": restore.state.value,
        "error": restore.error,
    }
    await notify(deps, uow, restore.workspace_id, WebhookEvent.RESTORE_FINISHED, data)


async def notify_drill(deps: Dependencies, uow: UnitOfWork, drill: Drill) -> None:
    """``drill.finished`` for a drill that ended (passed or not)."""
    data: dict[str, JsonValue] = {
        "drill_id": str(drill.id),
        "backup_id": str(drill.backup_id),
        "state": drill.state.value,
        "restore_seconds": drill.restore_seconds,
        "error": drill.error,
    }
    await notify(deps, uow, drill.workspace_id, WebhookEvent.DRILL_FINISHED, data)
