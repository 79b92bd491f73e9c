"""Authentication of bearer tokens and the authorization checks every use case starts with.

The checks run in the contract's order: credential, workspace selected, ``{wid}`` match
(``wrong_workspace`` or 404), then permission. Driving adapters call ``authorize`` before
they parse a request body (a missing permission outranks a malformed body) and pass the
``Grant`` it returns to the use case, which takes it as proof; given a plain ``Caller``
instead, a use case runs the checks itself, so an embedder cannot skip them.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar
from uuid import UUID

import attrs

from strongroom.domain.audit import Outcome
from strongroom.domain.errors import (
    MissingPermissionError,
    NotFoundError,
    UnauthenticatedError,
    WrongWorkspaceError,
)
from strongroom.domain.machines import USAGE_GRANULARITY, Worker, usage_is_stale
from strongroom.domain.permissions import BUILTIN_ROLES, WORKER_PERMISSIONS, Permission
from strongroom.domain.principals import Actor, Caller, PrincipalType
from strongroom.domain.tokens import TokenKind, hash_token, token_kind
from strongroom.ports.driven.repositories import SessionGrant
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.coalescing import Coalesced
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import record_by_caller

T = TypeVar("T")


async def target_is_visible(
    uow: UnitOfWork, resource: str, workspace_id: UUID, target_id: UUID | str
) -> bool | None:
    """Whether ``target_id`` names an object of the workspace, for the resources whose
    repositories the unit of work offers (the part of an action before the dot); ``None``
    for a resource with no look-up."""
    if resource == "workspace":
        return target_id == workspace_id
    if resource == "role":
        return isinstance(target_id, str) and (
            target_id in BUILTIN_ROLES or await uow.roles.get(workspace_id, target_id) is not None
        )
    if not isinstance(target_id, UUID):
        return False if resource in _UUID_TARGETS else None
    match resource:
        case "backup":
            return await uow.backups.get(workspace_id, target_id) is not None
        case "worker":
            return await uow.workers.exists(workspace_id, target_id)
        case "api_key":
            return await uow.api_keys.get(workspace_id, target_id) is not None
        case "member":
            return await uow.memberships.get(workspace_id, target_id) is not None
        case "run":
            return await uow.runs.get(workspace_id, target_id) is not None
        case "artifact":
            return await uow.artifacts.get(workspace_id, target_id) is not None
        case "restore":
            # A restore's creation names its artifact; its other actions the restore.
            return (
                await uow.restores.get(workspace_id, target_id) is not None
                or await uow.artifacts.get(workspace_id, target_id) is not None
            )
        case "webhook":
            return await uow.webhooks.get(workspace_id, target_id) is not None
        case "drill":
            # A drill's creation names its backup.
            return (
                await uow.drills.get(workspace_id, target_id) is not None
                or await uow.backups.get(workspace_id, target_id) is not None
            )
    return None


_UUID_TARGETS = frozenset(
    {"backup", "worker", "api_key", "member", "run", "artifact", "restore", "webhook", "drill"}
)


@attrs.frozen
class Bearer:
    """A bearer credential not checked yet, for the reads that check it in the same look-up
    as the data (one database round trip); ``Access.authenticate`` checks it alone."""

    token: str = attrs.field(repr=False)
    request_id: str | None = None


_SEAL = object()  # only Access.authorize makes grants


@attrs.frozen
class Grant:
    """Proof that ``caller`` passed ``Access.authorize`` for ``requirement`` in
    ``workspace_id``: use cases take it in place of a ``Caller`` and do not check again.
    Only ``Access.authorize`` makes one, so holding one means the checks ran."""

    caller: Caller
    requirement: Requirement
    workspace_id: UUID
    seal: object = attrs.field(repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.seal is not _SEAL:
            raise TypeError("a Grant comes from Access.authorize only")


def is_session(bearer: Bearer) -> bool:
    """Whether the bearer presents a session token (the credential of joined reads)."""
    return token_kind(bearer.token) is TokenKind.SESSION


# One look-up of a session (by token hash) joined with the data a read wants.
JoinedRead = Callable[[UnitOfWork, str], Awaitable[tuple[SessionGrant, T] | None]]


@attrs.frozen
class Requirement:
    """What an operation needs: one of ``permissions`` (and every one of ``also``);
    ``action`` names a mutation, whose refusals for a missing permission are audited as
    ``denied``.

    A refusal on a target the caller cannot see (another workspace's object, or none at
    all) is not audited (contract section 10): ``target_is_visible`` of the action's
    resource decides, and a resource with no look-up is audited.
    """

    permissions: tuple[Permission, ...]
    action: str | None = None
    # Permissions needed as well, every one of them (a restore needs a download and a
    # write); checked after ``permissions``, in this order.
    also: tuple[Permission, ...] = ()


def lacking_permissions(caller: Caller, granting: frozenset[Permission]) -> list[Permission]:
    """The permissions of ``granting`` the caller does not hold, in catalog order."""
    return [p for p in Permission if p in granting and p not in caller.permissions]


class Access:
    """Turns tokens into callers and decides what callers may do."""

    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps
        # Workers' credentials, checked in batches of the requests that come together.
        self._workers: Coalesced[str, Worker] = Coalesced(self._find_workers)

    async def authenticate(self, token: str, request_id: str | None = None) -> Caller:
        """The caller behind a bearer token; ``UnauthenticatedError`` for anything else."""
        kind = token_kind(token)
        if kind is TokenKind.SESSION:
            return await self._authenticate_session(token, request_id)
        if kind is TokenKind.API_KEY:
            return await self._authenticate_api_key(token, request_id)
        if kind is TokenKind.WORKER:
            return await self._authenticate_worker(token, request_id)
        raise UnauthenticatedError()

    async def _authenticate_api_key(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            key = await uow.api_keys.find(token_hash)
            if key is None or not hmac.compare_digest(key.token_hash, token_hash):
                raise UnauthenticatedError()
            if not key.is_live(now):
                raise UnauthenticatedError()
            if usage_is_stale(key.last_used_at, now):
                # Coalesced: at most one write per key and USAGE_GRANULARITY.
                await uow.api_keys.touch(key.id, now, now - USAGE_GRANULARITY)
                await uow.commit()
        return Caller(
            actor=Actor(PrincipalType.API_KEY, key.id),
            credential_id=key.id,
            workspace_id=key.workspace_id,
            permissions=key.permissions,
            request_id=request_id,
        )

    async def _authenticate_worker(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        worker = await self._workers.ask(token_hash)
        if worker is None or not hmac.compare_digest(worker.token_hash, token_hash):
            raise UnauthenticatedError()
        return Caller(
            actor=Actor(PrincipalType.WORKER, worker.id),
            credential_id=worker.id,
            workspace_id=worker.workspace_id,
            permissions=WORKER_PERMISSIONS,
            request_id=request_id,
        )

    async def _find_workers(self, token_hashes: Sequence[str]) -> dict[str, Worker]:
        """The workers of the credentials of concurrent requests, in one look (thousands of
        long polls arriving at once take one pooled connection, not one each); each one
        seen now, in one write (at most one per worker and ``USAGE_GRANULARITY``)."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            found = await uow.workers.find_many(token_hashes)
            stale = [w.id for w in found.values() if usage_is_stale(w.last_seen_at, now)]
            if stale:
                await uow.workers.touch_many(stale, now, now - USAGE_GRANULARITY)
                await uow.commit()
        return found

    async def _authenticate_session(self, token: str, request_id: str | None) -> Caller:
        token_hash = hash_token(token)
        async with self._deps.uow() as uow:
            grant = await uow.sessions.find(token_hash)
        return self.session_caller(grant, token_hash, request_id)

    def session_caller(
        self, grant: SessionGrant | None, token_hash: str, request_id: str | None
    ) -> Caller:
        """The caller of a session found by ``token_hash`` (``UnauthenticatedError`` when
        there is none, or it has ended, or its workspace membership has)."""
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

    @staticmethod
    def permits(caller: Caller, requirement: Requirement, workspace_id: UUID) -> bool:
        """Whether ``authorize`` would pass in ``workspace_id`` without a look-up (the
        caller's own workspace, a permission held); False says nothing about why not."""
        return caller.workspace_id == workspace_id and any(
            permission in caller.permissions for permission in requirement.permissions
        )

    async def authorize_joined(
        self,
        bearer: Bearer,
        requirement: Requirement,
        read: JoinedRead[T],
        *,
        workspace_id: UUID | None = None,
    ) -> T | None:
        """Authenticate a session and authorize ``requirement`` with the data of ``read``
        fetched in the same look-up (one round trip), then return that data.

        The read must be scoped by the session inside its query. The checks, and their
        order, are those of ``authenticate`` and ``authorize``: nothing of the data is
        returned unless both pass.
        """
        _, data = await self.authorize_joined_grant(
            bearer, requirement, read, workspace_id=workspace_id
        )
        return data

    async def authorize_joined_grant(
        self,
        bearer: Bearer,
        requirement: Requirement,
        read: JoinedRead[T],
        *,
        workspace_id: UUID | None = None,
    ) -> tuple[Grant, T | None]:
        """``authorize_joined``, with the ``Grant`` its checks gave (a write needs its
        caller: the actor of its audit event)."""
        token_hash = hash_token(bearer.token)
        async with self._deps.uow() as uow:
            found = await read(uow, token_hash)
        session, data = found if found is not None else (None, None)
        caller = self.session_caller(session, token_hash, bearer.request_id)
        grant = await self.authorize(caller, requirement, workspace_id=workspace_id)
        return grant, data

    async def enter_workspace(self, caller: Caller, workspace_id: UUID) -> UUID:
        """Check that ``workspace_id`` (from a path) is the caller's scope.

        Another workspace the person belongs to: ``wrong_workspace``; any other: 404, the
        same as a workspace that does not exist. A machine belongs to nothing else.
        """
        scoped = caller.scoped_workspace()
        if workspace_id == scoped:
            return scoped
        if caller.is_human and caller.user is not None:
            async with self._deps.uow() as uow:
                membership = await uow.memberships.get(workspace_id, caller.user.id)
            if membership is not None:
                raise WrongWorkspaceError()
        raise NotFoundError("workspace")

    async def authorize(
        self,
        caller: Caller,
        requirement: Requirement,
        *,
        workspace_id: UUID | None = None,
        target_id: UUID | str | None = None,
    ) -> Grant:
        """Run the checks; the grant names the workspace the operation acts in. Driving
        adapters pass it to the use case, which then does not check again."""
        scoped = (
            caller.scoped_workspace()
            if workspace_id is None
            else await self.enter_workspace(caller, workspace_id)
        )
        try:
            caller.ensure_permission(*requirement.permissions)
            for needed in requirement.also:
                caller.ensure_permission(needed)
        except MissingPermissionError:
            if requirement.action is not None:
                await self._record_denied(
                    caller, scoped, requirement.action, target_id, check_target=True
                )
            raise
        return Grant(caller, requirement, scoped, _SEAL)

    async def resolve(
        self,
        who: Caller | Grant,
        requirement: Requirement,
        *,
        workspace_id: UUID | None = None,
        target_id: UUID | str | None = None,
    ) -> tuple[Caller, UUID]:
        """The caller and the workspace of an operation: a ``Grant`` of this requirement
        (in ``workspace_id``, when given) as it is, since whoever holds it authorized
        already; a ``Caller``, or a grant of something else, authorized now."""
        if isinstance(who, Grant):
            if who.requirement is requirement and workspace_id in (None, who.workspace_id):
                return who.caller, who.workspace_id
            who = who.caller
        grant = await self.authorize(
            who, requirement, workspace_id=workspace_id, target_id=target_id
        )
        return grant.caller, grant.workspace_id

    async def refuse_escalation(
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
            await self._record_denied(caller, workspace_id, action, target_id, check_target=False)
            raise MissingPermissionError(lacking[0].value)

    async def _record_denied(
        self,
        caller: Caller,
        workspace_id: UUID,
        action: str,
        target_id: UUID | str | None,
        *,
        check_target: bool,
    ) -> None:
        """Audit a permission refusal, unless its target is not an object of the caller's
        workspace (attempts on objects the caller cannot see are audited nowhere)."""
        async with self._deps.uow() as uow:
            if check_target and target_id is not None:
                resource = action.partition(".")[0]
                if await target_is_visible(uow, resource, workspace_id, target_id) is False:
                    return
            await record_by_caller(
                self._deps, uow, caller, workspace_id, action, target_id, outcome=Outcome.DENIED
            )
            await uow.commit()
