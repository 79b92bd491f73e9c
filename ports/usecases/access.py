"""Authentication of bearer tokens and the authorization checks every use case starts with.

The checks run in the contract's order: credential, workspace selected, ``{wid}`` match
(``wrong_workspace`` or 404), then permission. Driving adapters call ``authorize`` before
they parse a request body (a missing permission outranks a malformed body); use cases call
it again themselves, so an embedder gets the same checks.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from uuid import UUID

import attrs

from strongroom.domain.audit import Outcome
from strongroom.domain.errors import (
    MissingPermissionError,
    NotFoundError,
    UnauthenticatedError,
    WrongWorkspaceError,
)
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Actor, Caller, PrincipalType
from strongroom.domain.tokens import TokenKind, hash_token, token_kind
from strongroom.ports.unit_of_work import UnitOfWork
from strongroom.ports.usecases.dependencies import Dependencies
from strongroom.ports.usecases.recording import record_by_caller

# Whether a target id names an object of the given workspace: (uow, workspace id, target id).
TargetCheck = Callable[[UnitOfWork, UUID, UUID | str], bool]

# The checks of the resources whose repositories the unit of work offers, by resource name
# (the part of an action before the dot).
TARGET_CHECKS: dict[str, TargetCheck] = {
    "workspace": lambda _uow, workspace_id, target_id: target_id == workspace_id,
    "backup": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.backups.get(workspace_id, target_id) is not None
    ),
    "run": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.runs.get(workspace_id, target_id) is not None
    ),
    "artifact": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.artifacts.get(workspace_id, target_id) is not None
    ),
}


@attrs.frozen
class Requirement:
    """What an operation needs: one of ``permissions``; ``action`` names a mutation, whose
    refusals for a missing permission are audited as ``denied``.

    A refusal on a target the caller cannot see (another workspace's object, or none at
    all) is not audited (contract section 10). ``target_check`` tells whether a target id
    is an object of the caller's workspace; without it, ``TARGET_CHECKS`` of the action's
    resource decides, and a resource with no check is audited.
    """

    permissions: tuple[Permission, ...]
    action: str | None = None
    target_check: TargetCheck | None = None


class Access:
    """Turns tokens into callers and decides what callers may do."""

    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps

    def authenticate(self, token: str, request_id: str | None = None) -> Caller:
        """The caller behind a bearer token; ``UnauthenticatedError`` for anything else."""
        kind = token_kind(token)
        if kind is TokenKind.SESSION:
            return self._authenticate_session(token, request_id)
        raise UnauthenticatedError()

    def _authenticate_session(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        with self._deps.uow() as uow:
            grant = uow.sessions.find(token_hash)
        if grant is None or not hmac.compare_digest(grant.session.token_hash, token_hash):
            raise UnauthenticatedError()
        session = grant.session
        if not session.is_live(self._deps.clock.now()):
            raise UnauthenticatedError()
        if session.workspace_id is not None and grant.role is None:
            raise UnauthenticatedError("this session's workspace membership has ended")
        return Caller(
            actor=Actor(PrincipalType.USER, grant.user.id),
            credential_id=session.id,
            workspace_id=session.workspace_id,
            permissions=grant.role.permissions if grant.role else frozenset(),
            user=grant.user,
            request_id=request_id,
        )

    def enter_workspace(self, caller: Caller, workspace_id: UUID) -> UUID:
        """Check that ``workspace_id`` (from a path) is the caller's scope.

        Another workspace the person belongs to: ``wrong_workspace``; any other: 404, the
        same as a workspace that does not exist. A machine belongs to nothing else.
        """
        scoped = caller.scoped_workspace()
        if workspace_id == scoped:
            return scoped
        if caller.is_human and caller.user is not None:
            with self._deps.uow() as uow:
                membership = uow.memberships.get(workspace_id, caller.user.id)
            if membership is not None:
                raise WrongWorkspaceError()
        raise NotFoundError("workspace")

    def authorize(
        self,
        caller: Caller,
        requirement: Requirement,
        *,
        workspace_id: UUID | None = None,
        target_id: UUID | str | None = None,
    ) -> UUID:
        """Run the checks and return the workspace the operation acts in."""
        scoped = (
            caller.scoped_workspace()
            if workspace_id is None
            else self.enter_workspace(caller, workspace_id)
        )
        try:
            caller.ensure_permission(*requirement.permissions)
        except MissingPermissionError:
            if requirement.action is not None:
                check = requirement.target_check or TARGET_CHECKS.get(
                    requirement.action.partition(".")[0]
                )
                self._record_denied(caller, scoped, requirement.action, target_id, check)
            raise
        return scoped

    def _record_denied(
        self,
        caller: Caller,
        workspace_id: UUID,
        action: str,
        target_id: UUID | str | None,
        target_check: TargetCheck | None,
    ) -> None:
        """Audit a permission refusal, unless its target is not an object of the caller's
        workspace (attempts on objects the caller cannot see are audited nowhere)."""
        with self._deps.uow() as uow:
            if (
                target_id is not None
                and target_check is not None
                and not target_check(uow, workspace_id, target_id)
            ):
                return
            record_by_caller(
                self._deps, uow, caller, workspace_id, action, target_id, outcome=Outcome.DENIED
            )
            uow.commit()
