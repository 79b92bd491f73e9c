"""Workspaces (tenants) and memberships."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from uuid import UUID

import attrs

from strongroom.domain.billing import BillingState, GatedOperation, ensure_allowed, is_allowed
from strongroom.domain.quotas import DEFAULT_LIMITS, QuotaResource, ensure_room


def _frozen_limits(value: Mapping[QuotaResource, int]) -> Mapping[QuotaResource, int]:
    return MappingProxyType(dict(value))


@attrs.frozen
class Admission:
    """What a workspace must allow to take one more object of ``resource``: a billing
    state that permits ``operation``, and room under the resource's limit."""

    operation: GatedOperation
    resource: QuotaResource

    @property
    def billing_states(self) -> frozenset[BillingState]:
        """The billing states that permit the operation."""
        return frozenset(state for state in BillingState if is_allowed(state, self.operation))

    @property
    def default_limit(self) -> int:
        """The resource's limit where no operator override exists (0: unlimited)."""
        return DEFAULT_LIMITS[self.resource]


@attrs.frozen
class Workspace:
    """A tenant: members, backups, quotas and billing all belong to exactly one workspace."""

    id: UUID
    name: str
    idp_org_id: str
    customer_id: str
    storage_namespace: str
    created_by: UUID
    billing_state: BillingState
    created_at: datetime
    updated_at: datetime
    quota_overrides: Mapping[QuotaResource, int] = attrs.field(
        factory=dict, converter=_frozen_limits
    )

    def limit(self, resource: QuotaResource) -> int:
        """The effective limit of ``resource``: an operator's override or the default."""
        return self.quota_overrides.get(resource, DEFAULT_LIMITS[resource])

    def admit(self, admission: Admission, usage: int) -> None:
        """Refuse one more object, in the contract's order: billing (409), then quota
        (409), given the resource's current ``usage``."""
        ensure_allowed(self.billing_state, admission.operation)
        ensure_room(admission.resource, self.limit(admission.resource), usage)

    def renamed(self, name: str, at: datetime) -> Workspace:
        """A copy with a new name."""
        return attrs.evolve(self, name=name, updated_at=at)

    def with_billing_state(self, state: BillingState, at: datetime) -> Workspace:
        """A copy in another billing state."""
        return attrs.evolve(self, billing_state=state, updated_at=at)

    def with_limit(self, resource: QuotaResource, limit: int, at: datetime) -> Workspace:
        """A copy with an operator's limit for ``resource``."""
        overrides = dict(self.quota_overrides)
        overrides[resource] = limit
        return attrs.evolve(self, quota_overrides=overrides, updated_at=at)


@attrs.frozen
class Membership:
    """A person's role in a workspace."""

    workspace_id: UUID
    user_id: UUID
    role: str
    joined_at: datetime


@attrs.frozen
class MemberWorkspace:
    """A workspace as one of its members sees it in their list: with their role."""

    workspace: Workspace
    role: str

    @property
    def id(self) -> UUID:
        """The workspace's id (keyset pagination)."""
        return self.workspace.id

    @property
    def created_at(self) -> datetime:
        """The workspace's creation time (keyset pagination)."""
        return self.workspace.created_at


@attrs.frozen
class Member:
    """A workspace's member as its member list shows them: the person and their role."""

    user_id: UUID
    email: str
    name: str
    role: str
    joined_at: datetime

    @property
    def id(self) -> UUID:
        """The person's id (keyset pagination)."""
        return self.user_id

    @property
    def created_at(self) -> datetime:
        """When they joined (keyset pagination)."""
        return self.joined_at


def admits(workspace: Workspace, admission: Admission, usage: int) -> bool:
    """Whether ``workspace.admit`` lets one more object in (it raises the refusal)."""
    limit = workspace.limit(admission.resource)
    return is_allowed(workspace.billing_state, admission.operation) and (
        limit == 0 or usage < limit
    )


def usage_bound(workspace: Workspace, admission: Admission) -> int | None:
    """The usage below which ``workspace.admit`` keeps admitting one more (None: any):
    what a store compares its counter with when it writes what was admitted, so that a
    decision taken on a count read earlier holds on the count it finds."""
    return workspace.limit(admission.resource) or None
