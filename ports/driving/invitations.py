"""Invitations: ask a person, by email, to join the workspace with a role.

The inviter must hold every permission of the role; the invitation is usable once, for
seven days, by a signed-in person whose email matches (case-insensitively). Members plus
pending invitations count against ``members_per_workspace``.
"""

from __future__ import annotations

import logging
from uuid import UUID

from strongroom.domain.audit import Change
from strongroom.domain.billing import GatedOperation
from strongroom.domain.errors import (
    InvalidStateError,
    NotFoundError,
    ValidationFailedError,
)
from strongroom.domain.events import Recorded
from strongroom.domain.invitations import (
    Invitation,
    clean_email,
)
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import Permission, Role, check_role_slug
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource, ensure_room
from strongroom.domain.timestamps import format_timestamp
from strongroom.domain.workspaces import Admission, Membership
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.changes import WorkspaceChange
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent
from strongroom.ports.driving.members import resolve_role

logger = logging.getLogger(__name__)

READ_INVITATIONS = Requirement((Permission.INVITATIONS_READ,))
CREATE_INVITATION = Requirement((Permission.INVITATIONS_WRITE,), "invitation.create")
ADMIT_MEMBER = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.MEMBERS_PER_WORKSPACE)


ACCEPT_REFUSAL = "only a person can accept an invitation"


class Invitations:
    """Inviting people and accepting invitations."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def create(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        email: str,
        role: str,
        accept_url_base: str | None = None,
        idempotency: IdempotencyKey | None = None,
    ) -> Invitation:
        """Invite ``email`` with ``role`` (whose permissions the caller must hold); the
        mailer delivers the invitation once it is stored."""
        caller, _ = await self._access.resolve(caller, CREATE_INVITATION, workspace_id=workspace_id)
        email = clean_email(email)
        check_role_slug(role, "role")
        async with self._deps.uow() as uow:
            granted = await self._existing_role(uow, workspace_id, role)
        await self._access.refuse_escalation(
            caller, workspace_id, "invitation.create", granted.permissions
        )
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Invitation:
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            workspace = await change.locked()
            # Pending invitations hold a seat until they are used or expire.
            seats = await uow.memberships.count(workspace_id)
            workspace.admit(
                ADMIT_MEMBER, seats + await uow.invitations.count_pending(workspace_id, now)
            )
            invitation = Invitation.issue(self._deps.ids.new_id(), workspace_id, email, role, now)
            await uow.invitations.add(invitation)
            change.collect(
                Recorded(
                    "invitation.create",
                    invitation.id,
                    {"email": Change(None, email), "role": Change(None, role)},
                )
            )
            stored.append(workspace.name)
            return invitation

        stored: list[str] = []  # the workspace's name, once this request stored it
        invitation = await run_idempotent(
            self._deps, caller, idempotency, now, store, ResultForm(Invitation)
        )
        if stored:  # a replay sends nothing again
            await self._deliver(stored[0], invitation, accept_url_base)
        return invitation

    async def _deliver(
        self, workspace_name: str, invitation: Invitation, accept_url_base: str | None
    ) -> None:
        link = f"{(accept_url_base or '').rstrip('/')}/v1/invitations/{invitation.id}/accept"
        body = (
            f"You are invited to join the workspace {workspace_name!r} as {invitation.role}.\n"
            f"Sign in as {invitation.email}, then accept with POST {link}\n"
            f"The invitation expires at {format_timestamp(invitation.expires_at)}."
        )
        try:
            await self._deps.mailer.send(
                invitation.email, f"Join {workspace_name} on Strongroom", body
            )
        except Exception:
            # The invitation stands; the mail can be sent again by inviting again.
            logger.exception("invitation %s could not be mailed", invitation.id)

    async def list(
        self, caller: Caller | Grant, workspace_id: UUID, page: PageRequest
    ) -> Page[Invitation]:
        """The workspace's invitations, newest first."""
        caller, _ = await self._access.resolve(caller, READ_INVITATIONS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.invitations.list(workspace_id, page)

    async def get(
        self, caller: Caller | Grant, workspace_id: UUID, invitation_id: UUID
    ) -> Invitation:
        """One invitation of the workspace (another workspace's is not found)."""
        caller, _ = await self._access.resolve(caller, READ_INVITATIONS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            found = await uow.invitations.get(workspace_id, invitation_id)
        if found is None:
            raise NotFoundError("invitation")
        return found

    async def accept(self, caller: Caller, invitation_id: UUID) -> Membership:
        """Join the invitation's workspace; the caller's email must be the invited one."""
        user = caller.person(ACCEPT_REFUSAL)
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            invitation = await uow.invitations.get_for_email(invitation_id, user.email)
            if invitation is None:
                raise NotFoundError("invitation")
            workspace_id = invitation.workspace_id
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            workspace = await change.gate()
            used = invitation.accepted(now)
            resource = QuotaResource.MEMBERS_PER_WORKSPACE
            others = await uow.invitations.count_pending(workspace_id, now) - 1
            ensure_room(
                resource,
                workspace.limit(resource),
                await uow.memberships.count(workspace_id) + others,
            )
            if await uow.memberships.get(workspace_id, user.id) is not None:
                raise InvalidStateError("you are already a member of this workspace")
            if await resolve_role(uow, workspace_id, invitation.role) is None:
                raise InvalidStateError("the invitation's role no longer exists")
            membership = Membership(workspace_id, user.id, invitation.role, now)
            await uow.memberships.add(membership)
            await uow.invitations.update(used)
            accepted = {"role": Change(None, invitation.role)}
            change.collect(Recorded("invitation.accept", invitation_id, accepted))
            await uow.commit()
        return membership

    @staticmethod
    async def _existing_role(uow: UnitOfWork, workspace_id: UUID, slug: str) -> Role:
        role = await resolve_role(uow, workspace_id, slug)
        if role is None:
            raise ValidationFailedError(f"role {slug} does not exist in this workspace")
        return role
