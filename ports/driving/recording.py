"""Audit events of the changes use cases make, for the unit of work that commits them
(``UnitOfWork.collect``)."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from strongroom.domain.audit import AuditEvent, Change, Outcome
from strongroom.domain.events import Recorded
from strongroom.domain.principals import SYSTEM_ACTOR, Actor, Caller, PrincipalType
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies

SESSION_PERSON = UUID(int=0)
"""The actor id of an event whose repository attributes it to a session's person."""


def caller_event(
    deps: Dependencies,
    caller: Caller,
    workspace_id: UUID,
    action: str,
    target_id: UUID | str | None,
    changes: Mapping[str, Change] | None = None,
) -> AuditEvent:
    """The audit event of a successful mutation by ``caller``, for repositories that write
    it together with the change (``record_by_caller`` adds it to a unit of work)."""
    return _resource_event(
        deps, caller.actor, caller.request_id, workspace_id, action, target_id, changes
    )


def session_event(
    deps: Dependencies,
    request_id: str | None,
    workspace_id: UUID,
    action: str,
    target_id: UUID | str | None,
    changes: Mapping[str, Change] | None = None,
) -> AuditEvent:
    """``caller_event`` for a write joined with its session's look-up: the actor is
    ``SESSION_PERSON``, which the repository replaces with the session's person."""
    actor = Actor(PrincipalType.USER, SESSION_PERSON)
    return _resource_event(deps, actor, request_id, workspace_id, action, target_id, changes)


def _resource_event(
    deps: Dependencies,
    actor: Actor,
    request_id: str | None,
    workspace_id: UUID,
    action: str,
    target_id: UUID | str | None,
    changes: Mapping[str, Change] | None,
    outcome: Outcome = Outcome.SUCCESS,
) -> AuditEvent:
    """An event whose target type is its action's resource (``backup`` of ``backup.create``)."""
    target_type = action.partition(".")[0]
    return _event(
        deps, actor, request_id, workspace_id, action, target_type, target_id, changes, outcome
    )


def _event(
    deps: Dependencies,
    actor: Actor,
    request_id: str | None,
    workspace_id: UUID,
    action: str,
    target_type: str,
    target_id: UUID | str | None,
    changes: Mapping[str, Change] | None,
    outcome: Outcome = Outcome.SUCCESS,
) -> AuditEvent:
    return AuditEvent(
        id=deps.ids.new_id(),
        workspace_id=workspace_id,
        occurred_at=deps.clock.now(),
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=None if target_id is None else str(target_id),
        request_id=request_id,
        outcome=outcome,
        changes=changes,
    )


async def record_by_caller(
    deps: Dependencies,
    uow: UnitOfWork,
    caller: Caller,
    workspace_id: UUID,
    action: str,
    target_id: UUID | str | None,
    changes: Mapping[str, Change] | None = None,
    *,
    outcome: Outcome = Outcome.SUCCESS,
) -> None:
    """Audit a mutation by ``caller`` (or its refusal); the target type is the action's
    resource."""
    uow.collect(
        _resource_event(
            deps, caller.actor, caller.request_id, workspace_id, action, target_id, changes, outcome
        )
    )


def by_caller(
    deps: Dependencies, caller: Caller, workspace_id: UUID, recorded: Recorded
) -> AuditEvent:
    """The audit event of ``recorded``, a change ``caller`` made (for ``UnitOfWork.collect``)."""
    return _recorded_event(deps, caller.actor, caller.request_id, workspace_id, recorded)


def by_system(deps: Dependencies, workspace_id: UUID, recorded: Recorded) -> AuditEvent:
    """The audit event of ``recorded``, a change a job made as the ``system`` actor."""
    return _recorded_event(deps, SYSTEM_ACTOR, None, workspace_id, recorded)


def _recorded_event(
    deps: Dependencies,
    actor: Actor,
    request_id: str | None,
    workspace_id: UUID,
    recorded: Recorded,
) -> AuditEvent:
    return _event(
        deps,
        actor,
        request_id,
        workspace_id,
        recorded.action,
        recorded.target,
        recorded.target_id,
        recorded.changes,
    )
