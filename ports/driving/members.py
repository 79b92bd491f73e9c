"""Members and custom roles of a workspace.

Nobody grants more than they hold: a role's permissions, and a member's new role, must be
the caller's own permissions; a member holding a permission the caller lacks can be
neither changed nor removed by that caller (403, audited as ``denied``).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import attrs

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.audit import Change, JsonValue, diff
from strongroom.domain.backups import UNSET
from strongroom.domain.backups import Unset as _Unset
from strongroom.domain.errors import (
    InvalidStateError,
    LastAdminError,
    NameTakenError,
    NotFoundError,
    ValidationFailedError,
)
from strongroom.domain.events import Recorded
from strongroom.domain.machines import in_catalog_order
from strongroom.domain.names import clean_name
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.permissions import (
    ADMIN,
    BUILTIN_ROLES,
    Permission,
    Role,
    check_role_slug,
    requested_permissions,
)
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import Member, Membership
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement, lacking_permissions
from strongroom.ports.driving.changes import WorkspaceChange, changing
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import IdempotencyKey, ResultForm, run_idempotent
from strongroom.ports.driving.preconditions import Precondition, check_precondition

READ_MEMBERS = Requirement((Permission.MEMBERS_READ,))
UPDATE_MEMBER = Requirement((Permission.MEMBERS_WRITE,), "member.update")
DELETE_MEMBER = Requirement((Permission.MEMBERS_WRITE,), "member.delete")
READ_ROLES = Requirement((Permission.ROLES_READ,))
CREATE_ROLE = Requirement((Permission.ROLES_WRITE,), "role.create")
UPDATE_ROLE = Requirement((Permission.ROLES_WRITE,), "role.update")
DELETE_ROLE = Requirement((Permission.ROLES_WRITE,), "role.delete")


async def resolve_role(uow: UnitOfWork, workspace_id: UUID, slug: str) -> Role | None:
    """A built-in role, or a custom role of the workspace."""
    return BUILTIN_ROLES.get(slug) or await uow.roles.get(workspace_id, slug)


def _slugs(permissions: frozenset[Permission]) -> list[JsonValue]:
    return [p.value for p in in_catalog_order(permissions)]


class Members:
    """The members of a workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def list(
        self, caller: Caller | Grant, workspace_id: UUID, page: PageRequest
    ) -> Page[Member]:
        """The workspace's members, newest first."""
        caller, _ = await self._access.resolve(caller, READ_MEMBERS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return await uow.memberships.list_members(workspace_id, page)

    async def get(self, caller: Caller | Grant, workspace_id: UUID, user_id: UUID) -> Member:
        """One member of the workspace."""
        caller, _ = await self._access.resolve(caller, READ_MEMBERS, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            membership = await lookups.membership(uow, workspace_id, user_id)
            return await _member(uow, membership)

    async def change_role(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        user_id: UUID,
        role: str,
        *,
        precondition: Precondition[Member] | None = None,
    ) -> Member:
        """Give a member another role; the last admin cannot be demoted. A
        ``precondition`` on the member as it stands is checked under the workspace's lock."""
        caller, _ = await self._access.resolve(
            caller, UPDATE_MEMBER, workspace_id=workspace_id, target_id=user_id
        )
        check_role_slug(role, "role")
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            await change.locked()
            membership = await lookups.membership(uow, workspace_id, user_id)
            current_member = await _member(uow, membership)
            check_precondition(precondition, current_member, "member")
            new_role = await resolve_role(uow, workspace_id, role)
            if new_role is None:
                raise ValidationFailedError(f"role {role} does not exist in this workspace")
            current = await resolve_role(uow, workspace_id, membership.role)
            granting = new_role.permissions | (current.permissions if current else frozenset())
            if not lacking_permissions(caller, granting):
                await change.gate()
                if (
                    membership.role == ADMIN.slug
                    and role != ADMIN.slug
                    and await uow.memberships.count_with_role(workspace_id, ADMIN.slug) <= 1
                ):
                    raise LastAdminError("the last admin of a workspace cannot be demoted")
                changed = attrs.evolve(membership, role=role)
                if role != membership.role:
                    await uow.memberships.update(changed)
                change.collect(
                    Recorded(
                        "member.update", user_id, diff({"role": membership.role}, {"role": role})
                    )
                )
                return attrs.evolve(current_member, role=role)
        await self._access.refuse_escalation(
            caller, workspace_id, "member.update", granting, user_id
        )
        raise AssertionError("unreachable: the escalation was refused")

    async def remove(self, caller: Caller | Grant, workspace_id: UUID, user_id: UUID) -> None:
        """End a membership; the last admin cannot be removed."""
        caller, _ = await self._access.resolve(
            caller, DELETE_MEMBER, workspace_id=workspace_id, target_id=user_id
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            await change.locked()
            membership = await lookups.membership(uow, workspace_id, user_id)
            current = await resolve_role(uow, workspace_id, membership.role)
            granting = current.permissions if current else frozenset()
            if not lacking_permissions(caller, granting):
                await change.gate()
                if (
                    membership.role == ADMIN.slug
                    and await uow.memberships.count_with_role(workspace_id, ADMIN.slug) <= 1
                ):
                    raise LastAdminError("the last admin of a workspace cannot be removed")
                await uow.memberships.remove(workspace_id, user_id)
                removal = {"role": Change(membership.role, None)}
                change.collect(Recorded("member.delete", user_id, removal))
                return
        await self._access.refuse_escalation(
            caller, workspace_id, "member.delete", granting, user_id
        )
        raise AssertionError("unreachable: the escalation was refused")


class Roles:
    """Built-in and custom roles of a workspace."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def list(self, caller: Caller | Grant, workspace_id: UUID) -> list[Role]:
        """Built-in roles, then the workspace's custom roles by slug."""
        caller, _ = await self._access.resolve(caller, READ_ROLES, workspace_id=workspace_id)
        async with self._deps.uow() as uow:
            return [*BUILTIN_ROLES.values(), *await uow.roles.list(workspace_id)]

    async def get(self, caller: Caller | Grant, workspace_id: UUID, slug: str) -> Role:
        """One role."""
        caller, _ = await self._access.resolve(caller, READ_ROLES, workspace_id=workspace_id)
        check_role_slug(slug)
        async with self._deps.uow() as uow:
            role = await resolve_role(uow, workspace_id, slug)
        if role is None:
            raise NotFoundError("role")
        return role

    async def create(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        slug: str,
        name: str,
        permissions: Sequence[str],
        idempotency: IdempotencyKey | None = None,
    ) -> Role:
        """Create a custom role with permissions the caller holds."""
        caller, _ = await self._access.resolve(
            caller, CREATE_ROLE, workspace_id=workspace_id, target_id=slug
        )
        check_role_slug(slug)
        name = clean_name(name)
        granted = requested_permissions(permissions)
        await self._access.refuse_escalation(caller, workspace_id, "role.create", granted, slug)
        role = Role(slug, name, granted)
        now = self._deps.clock.now()

        async def store(uow: UnitOfWork) -> Role:
            change = WorkspaceChange(self._deps, uow, caller, workspace_id)
            await change.gate()
            if slug in BUILTIN_ROLES:
                raise NameTakenError(f"{slug} is a built-in role")
            await uow.roles.add(workspace_id, role)
            change.collect(
                Recorded(
                    "role.create",
                    slug,
                    {"name": Change(None, name), "permissions": Change(None, _slugs(granted))},
                )
            )
            return role

        return await run_idempotent(self._deps, caller, idempotency, now, store, ResultForm(Role))

    async def update(
        self,
        caller: Caller | Grant,
        workspace_id: UUID,
        slug: str,
        name: str | _Unset = UNSET,
        permissions: Sequence[str] | _Unset = UNSET,
        *,
        precondition: Precondition[Role] | None = None,
    ) -> Role:
        """Rename a custom role or change its permissions (built-in roles: 409). A
        ``precondition`` on the role as it stands is checked under the workspace's lock."""
        caller, _ = await self._access.resolve(
            caller, UPDATE_ROLE, workspace_id=workspace_id, target_id=slug
        )
        check_role_slug(slug)
        new_name = None if isinstance(name, _Unset) else clean_name(name)
        async with self._deps.uow() as uow:
            role = await self._custom(uow, workspace_id, slug)
        check_precondition(precondition, role, "role")  # before 422 and 403, as for members
        granted = (
            role.permissions
            if isinstance(permissions, _Unset)
            else requested_permissions(permissions)
        )
        # Neither grant more than one holds, nor change a role that holds more.
        await self._access.refuse_escalation(
            caller, workspace_id, "role.update", granted | role.permissions, slug
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            await change.locked()
            role = await self._custom(uow, workspace_id, slug)
            check_precondition(precondition, role, "role")
            await change.gate()
            changed = attrs.evolve(
                role, name=role.name if new_name is None else new_name, permissions=granted
            )
            if changed != role:
                await uow.roles.update(workspace_id, changed)
            change.collect(
                Recorded(
                    "role.update",
                    slug,
                    diff(
                        {"name": role.name, "permissions": _slugs(role.permissions)},
                        {"name": changed.name, "permissions": _slugs(changed.permissions)},
                    ),
                )
            )
        return changed

    async def delete(self, caller: Caller | Grant, workspace_id: UUID, slug: str) -> None:
        """Delete a custom role nobody holds."""
        caller, _ = await self._access.resolve(
            caller, DELETE_ROLE, workspace_id=workspace_id, target_id=slug
        )
        check_role_slug(slug)
        async with self._deps.uow() as uow:
            role = await self._custom(uow, workspace_id, slug)
        await self._access.refuse_escalation(
            caller, workspace_id, "role.delete", role.permissions, slug
        )
        async with changing(self._deps, caller, workspace_id) as change:
            uow = change.uow
            await change.locked()
            role = await self._custom(uow, workspace_id, slug)
            await change.gate()
            if await uow.memberships.count_with_role(workspace_id, slug):
                raise InvalidStateError(f"members hold the role {slug}: give them another first")
            if await uow.invitations.count_pending(workspace_id, self._deps.clock.now(), role=slug):
                raise InvalidStateError(f"pending invitations give the role {slug}")
            await uow.roles.remove(workspace_id, slug)
            change.collect(
                Recorded(
                    "role.delete",
                    slug,
                    {
                        "name": Change(role.name, None),
                        "permissions": Change(_slugs(role.permissions), None),
                    },
                )
            )

    @staticmethod
    async def _custom(uow: UnitOfWork, workspace_id: UUID, slug: str) -> Role:
        if slug in BUILTIN_ROLES:
            raise InvalidStateError(f"{slug} is a built-in role and cannot be changed")
        role = await uow.roles.get(workspace_id, slug)
        if role is None:
            raise NotFoundError("role")
        return role


async def _member(uow: UnitOfWork, membership: Membership) -> Member:
    """A membership as the API shows a member (with the person's email and name)."""
    person = await uow.users.get(membership.user_id)
    assert person is not None
    return Member(
        membership.user_id, person.email, person.name, membership.role, membership.joined_at
    )
