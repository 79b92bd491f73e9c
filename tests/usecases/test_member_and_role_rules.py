"""Member and role rules through the facade: a change reaches the holder's live session,
the last admin stays, a removal ends the person's sessions, nobody grants or touches more
than they hold, and a blocked workspace takes no role or member change.

Moved down from ``tests/http/test_members_and_roles.py``, which keeps the wire shapes, the
status codes and the order of checks."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    InvalidStateError,
    LastAdminError,
    MissingPermissionError,
    NameTakenError,
    NotFoundError,
    UnauthenticatedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.ports.driving import Strongroom
from support.people import audit_events, sign_in, workspace_admin

SECOND = timedelta(seconds=1)


async def joined(
    facade: Strongroom, admin: Caller, workspace_id: UUID, email: str, role: str
) -> tuple[str, UUID]:
    """``email`` invited with ``role``, accepted and switched in: the scoped session's token
    (a live session, authenticated anew on each use) and the person's user id."""
    invitation = await facade.invitations.create(admin, workspace_id, email, role)
    person = await sign_in(facade, email)
    await facade.invitations.accept(person, invitation.id)
    issued = await facade.sessions.switch(person, workspace_id)
    assert person.user is not None
    return issued.token, person.user.id


def user_id_of(caller: Caller) -> UUID:
    """The user id behind a person's caller."""
    assert caller.user is not None
    return caller.user.id


async def outcomes(facade: Strongroom, admin: Caller, action: str) -> list[Outcome]:
    """The outcomes of ``action``'s events, oldest first."""
    return [event.outcome for event in reversed(await audit_events(facade, admin, action))]


class TestMembers:
    """Role changes, the last admin, removal, and who may touch whom."""

    async def test_a_role_change_takes_effect_on_the_next_request(self, facade: Strongroom) -> None:
        """Bob, a viewer, becomes a member: his live session can then create backups; the
        change is audited on the member."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, bob_id = await joined(facade, ada, wid, "bob@example.com", "viewer")
        with pytest.raises(MissingPermissionError):
            await facade.backups.create(
                await facade.access.authenticate(bob), wid, "n", BackupKind.MANUAL
            )
        changed = await facade.members.change_role(ada, wid, bob_id, "member")
        assert changed.role == "member"
        caller = await facade.access.authenticate(bob)
        await facade.backups.create(caller, wid, "n", BackupKind.MANUAL)
        [event] = await audit_events(facade, ada, "member.update")
        assert event.changes == {"role": Change("viewer", "member")}
        assert (event.target_type, event.target_id) == ("member", str(bob_id))

    async def test_the_last_admin_stays_whoever_it_is(self, facade: Strongroom) -> None:
        """``last_admin`` for a demotion or removal of the only admin; with a second admin
        the first may step down, and then the second is the one who cannot leave."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        ada_id = user_id_of(ada)
        with pytest.raises(LastAdminError):
            await facade.members.change_role(ada, wid, ada_id, "member")
        with pytest.raises(LastAdminError):
            await facade.members.remove(ada, wid, ada_id)
        token, bob_id = await joined(facade, ada, wid, "bob@example.com", "admin")
        await facade.members.change_role(ada, wid, ada_id, "member")
        bob = await facade.access.authenticate(token)
        with pytest.raises(LastAdminError) as refused:
            await facade.members.remove(bob, wid, bob_id)
        assert refused.value.code == "last_admin"
        await facade.members.change_role(bob, wid, ada_id, "admin")
        await facade.members.remove(bob, wid, bob_id)

    async def test_removal_ends_the_membership_and_its_sessions(self, facade: Strongroom) -> None:
        """The removed person's scoped session no longer authenticates; a second removal
        is ``not_found``; one successful ``member.delete``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, bob_id = await joined(facade, ada, wid, "bob@example.com", "viewer")
        await facade.members.remove(ada, wid, bob_id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(bob)
        with pytest.raises(NotFoundError):
            await facade.members.remove(ada, wid, bob_id)
        assert await outcomes(facade, ada, "member.delete") == [Outcome.SUCCESS]

    async def test_a_member_cannot_change_roles(self, facade: Strongroom) -> None:
        """``member`` lacks ``members:write``: refused naming it, audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        mia, _ = await joined(facade, ada, wid, "mia@example.com", "member")
        _, bob_id = await joined(facade, ada, wid, "bob@example.com", "viewer")
        caller = await facade.access.authenticate(mia)
        with pytest.raises(MissingPermissionError, match="missing permission members:write"):
            await facade.members.change_role(caller, wid, bob_id, "member")
        assert await outcomes(facade, ada, "member.update") == [Outcome.DENIED]

    async def test_nobody_grants_or_touches_more_than_they_hold(self, facade: Strongroom) -> None:
        """A people manager (members:write, no backups:write) cannot make anyone a member,
        nor demote or remove an admin: each refusal audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(
            ada, wid, "people", "People", ["members:read", "members:write", "backups:read"]
        )
        token, _ = await joined(facade, ada, wid, "pam@example.com", "people")
        _, bob_id = await joined(facade, ada, wid, "bob@example.com", "viewer")
        pam = await facade.access.authenticate(token)
        with pytest.raises(MissingPermissionError, match="missing permission"):
            await facade.members.change_role(pam, wid, bob_id, "member")
        with pytest.raises(MissingPermissionError):
            await facade.members.change_role(pam, wid, user_id_of(ada), "viewer")
        with pytest.raises(MissingPermissionError):
            await facade.members.remove(pam, wid, user_id_of(ada))
        assert await outcomes(facade, ada, "member.update") == [Outcome.DENIED] * 2
        assert await outcomes(facade, ada, "member.delete") == [Outcome.DENIED]


class TestRoles:
    """Custom roles: taken slugs, changes reaching holders, never more than their maker."""

    async def test_a_custom_slug_is_taken_once(self, facade: Strongroom) -> None:
        """A second ``ops`` is ``name_taken``, like a built-in slug."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(ada, wid, "ops", "n", [])
        for slug in ("ops", "admin"):
            with pytest.raises(NameTakenError):
                await facade.roles.create(ada, wid, slug, "n", [])

    async def test_a_role_change_reaches_its_holders_and_a_held_role_cannot_go(
        self, facade: Strongroom
    ) -> None:
        """Widening a role lets its holder's live session write at once; while held the
        role cannot be deleted; once nobody holds it, it goes (audited) and is not found."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(ada, wid, "ops", "Ops", ["backups:read"])
        olly, olly_id = await joined(facade, ada, wid, "olly@example.com", "ops")
        with pytest.raises(MissingPermissionError):
            await facade.backups.create(
                await facade.access.authenticate(olly), wid, "n", BackupKind.MANUAL
            )
        patched = await facade.roles.update(
            ada, wid, "ops", permissions=["backups:read", "backups:write"]
        )
        assert {str(p) for p in patched.permissions} == {"backups:read", "backups:write"}
        caller = await facade.access.authenticate(olly)
        await facade.backups.create(caller, wid, "n", BackupKind.MANUAL)
        with pytest.raises(InvalidStateError):
            await facade.roles.delete(ada, wid, "ops")
        await facade.members.change_role(ada, wid, olly_id, "viewer")
        await facade.roles.delete(ada, wid, "ops")
        with pytest.raises(NotFoundError):
            await facade.roles.get(ada, wid, "ops")
        assert [e.action for e in await audit_events(facade, ada, "role.delete")] == ["role.delete"]

    async def test_roles_never_hold_more_than_their_maker(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A role manager without ``artifacts:delete`` cannot create a role with it, nor
        widen their own with ``workspaces:write``: refused naming the slug, audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(
            ada, wid, "role-admin", "Role admin", ["roles:read", "roles:write", "backups:read"]
        )
        token, _ = await joined(facade, ada, wid, "rita@example.com", "role-admin")
        rita = await facade.access.authenticate(token)
        clock.advance(SECOND)
        with pytest.raises(MissingPermissionError, match="missing permission artifacts:delete"):
            await facade.roles.create(rita, wid, "wide", "Wide", ["artifacts:delete"])
        clock.advance(SECOND)
        await facade.roles.create(rita, wid, "narrow", "Narrow", ["backups:read"])
        with pytest.raises(MissingPermissionError, match="missing permission workspaces:write"):
            await facade.roles.update(
                rita,
                wid,
                "role-admin",
                permissions=["roles:read", "roles:write", "workspaces:write"],
            )
        assert await outcomes(facade, ada, "role.create") == [
            Outcome.SUCCESS,
            Outcome.DENIED,
            Outcome.SUCCESS,
        ]

    async def test_a_role_holding_more_than_the_caller_cannot_be_changed_or_deleted(
        self, facade: Strongroom
    ) -> None:
        """Narrowing or deleting a role with a permission the caller lacks is refused
        naming it; renaming their own role is fine."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(ada, wid, "role-admin", "R", ["roles:read", "roles:write"])
        await facade.roles.create(ada, wid, "danger", "D", ["artifacts:delete"])
        token, _ = await joined(facade, ada, wid, "rita@example.com", "role-admin")
        rita = await facade.access.authenticate(token)
        with pytest.raises(MissingPermissionError, match="missing permission artifacts:delete"):
            await facade.roles.update(rita, wid, "danger", permissions=[])
        with pytest.raises(MissingPermissionError, match="missing permission artifacts:delete"):
            await facade.roles.delete(rita, wid, "danger")
        assert (await facade.roles.update(rita, wid, "role-admin", name="Roles")).name == "Roles"
        assert await outcomes(facade, ada, "role.delete") == [Outcome.DENIED]

    async def test_a_blocked_workspace_refuses_role_and_member_changes(
        self, facade: Strongroom
    ) -> None:
        """``billing_restricted`` for a new role and a role change; reading members works."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        _, bob_id = await joined(facade, ada, wid, "bob@example.com", "viewer")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.roles.create(ada, wid, "ops", "Ops", [])
        with pytest.raises(BillingRestrictedError):
            await facade.members.change_role(ada, wid, bob_id, "member")
        assert len((await facade.members.list(ada, wid, PageRequest())).items) == 2
