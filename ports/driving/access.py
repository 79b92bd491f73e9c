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
from strongroom.domain.machines import USAGE_GRANULARITY, usage_is_stale
from strongroom.domain.permissions import BUILTIN_ROLES, WORKER_PERMISSIONS, Permission
from strongroom.domain.principals import Actor, Caller, PrincipalType
from strongroom.domain.tokens import TokenKind, hash_token, token_kind
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import record_by_caller

# Whether a target id names an object of the given workspace: (uow, workspace id, target id).
TargetCheck = Callable[[UnitOfWork, UUID, UUID | str], bool]

# The checks of the resources whose repositories the unit of work offers, by resource name
# (the part of an action before the dot).
TARGET_CHECKS: dict[str, TargetCheck] = {
    "workspace": lambda _uow, workspace_id, target_id: target_id == workspace_id,
    "backup": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.backups.get(workspace_id, target_id) is not None
    ),
    "worker": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.workers.exists(workspace_id, target_id)
    ),
    "api_key": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.api_keys.get(workspace_id, target_id) is not None
    ),
    "member": lambda uow, workspace_id, target_id: (
        isinstance(target_id, UUID) and uow.memberships.get(workspace_id, target_id) is not None
    ),
    "role": lambda uow, workspace_id, target_id: (
        isinstance(target_id, str)
        and (target_id in BUILTIN_ROLES or uow.roles.get(workspace_id, target_id) is not None)
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


def lacking_permissions(caller: Caller, granting: frozenset[Permission]) -> list[Permission]:
    """The permissions of ``granting`` the caller does not hold, in catalog order."""
    return [p for p in Permission if p in granting and p not in caller.permissions]


class Access:
    """Turns tokens into callers and decides what callers may do."""

    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps

    def authenticate(self, token: str, request_id: str | None = None) -> Caller:
        """The caller behind a bearer token; ``UnauthenticatedError`` for anything else."""
        kind = token_kind(token)
        if kind is TokenKind.SESSION:
            return self._authenticate_session(token, request_id)
        if kind is TokenKind.API_KEY:
            return self._authenticate_api_key(token, request_id)
        if kind is TokenKind.WORKER:
            return self._authenticate_worker(token, request_id)
        raise UnauthenticatedError()

    def _authenticate_api_key(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        now = self._deps.clock.now()
        with self._deps.uow() as uow:
            key = uow.api_keys.find(token_hash)
            if key is None or not hmac.compare_digest(key.token_hash, token_hash):
                raise UnauthenticatedError()
            if not key.is_live(now):
                raise UnauthenticatedError()
            if usage_is_stale(key.last_used_at, now):
                # Coalesced: at most one write per key and USAGE_GRANULARITY.
                uow.api_keys.touch(key.id, now, now - USAGE_GRANULARITY)
                uow.commit()
        return Caller(
            actor=Actor(PrincipalType.API_KEY, key.id),
            credential_id=key.id,
            workspace_id=key.workspace_id,
            permissions=key.permissions,
            request_id=request_id,
        )

    def _authenticate_worker(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        now = self._deps.clock.now()
        with self._deps.uow() as uow:
            worker = uow.workers.find(token_hash)
            if worker is None or not hmac.compare_digest(worker.token_hash, token_hash):
                raise UnauthenticatedError()
            if usage_is_stale(worker.last_seen_at, now):
                uow.workers.touch(worker.id, now, now - USAGE_GRANULARITY)
                uow.commit()
        return Caller(
            actor=Actor(PrincipalType.WORKER, worker.id),
            credential_id=worker.id,
            workspace_id=worker.workspace_id,
            permissions=WORKER_PERMISSIONS,
            request_id=request_id,
        )

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

    def refuse_escalation(
        self,
        caller: Caller,
        workspace_id: UUID,
        action: str,
        granting: frozenset[Permission],
        target_id: UUID | str | None = None,
    ) -> None:
        """Refuse (403, audited as ``denied``) to grant any permission the caller lacks.

        Nobody can hand out more than they hold: through an API key, a role, an invitation
        or a member's new role.
        """
        lacking = lacking_permissions(caller, granting)
        if lacking:
            self._record_denied(caller, workspace_id, action, target_id, None)
            raise MissingPermissionError(lacking[0].value)

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
