"""Invitations to a workspace and the memberships they make."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.wire.scalars import Email, RoleSlug
from strongroom.adapters.wire.views import view_of
from strongroom.domain import workspaces
from strongroom.domain.invitations import Invitation as DomainInvitation
from strongroom.domain.invitations import InvitationState


@attrs.frozen
class InvitationCreate:
    """`POST /v1/workspaces/{wid}/invitations`."""

    email: Email
    role: RoleSlug


@view_of(DomainInvitation)
@attrs.frozen
class Invitation:
    """An invitation to join a workspace."""

    id: UUID
    email: Email
    role: RoleSlug
    state: InvitationState
    """`expired` once `expires_at` has passed unused."""
    expires_at: datetime
    """Seven days after creation."""
    created_at: datetime


@view_of(workspaces.Membership)
@attrs.frozen
class Membership:
    """The membership an accepted invitation made."""

    workspace_id: UUID
    user_id: UUID
    role: RoleSlug
    joined_at: datetime
