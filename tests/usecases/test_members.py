"""Members, custom roles and invitations through the facade: nobody grants more than they
hold, the last admin stays, invitations are for the invited email only and hold a seat."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock, OutboxMailer
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    InvalidStateError,
    LastAdminError,
    MissingPermissionError,
    NameTakenError,
    NotFoundError,
    QuotaExceededError,
    ValidationFailedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import audit_events, enter, join, sign_in, workspace_admin


def user_id_of(caller: Caller) -> UUID:
    """The user id behind a person's caller."""
    assert caller.user is not None
    return caller.user.id


class TestMembers:
    """Listing members, changing roles, removing members."""

    async def test_lists_members_with_their_roles(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Every member with email and role, newest first."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        clock.advance(timedelta(seconds=1))
        await join(facade, ada, wid, "vera@example.com", "viewer")
        members = (await facade.members.list(ada, wid, PageRequest())).items
        assert [(m.email, m.role) for m in members] == [
            ("vera@example.com", "viewer"),
            ("ada@example.com", "admin"),
        ]

    async def test_change_role_is_audited(self, facade: Strongroom) -> None:
        """An admin makes a viewer a member; ``member.update`` records the role change and
        the person's next session holds the new permissions."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        changed = await facade.members.change_role(ada, wid, user_id_of(vera), "member")
        assert changed.role == "member"
        [event] = await audit_events(facade, ada, "member.update")
        assert event.changes == {"role": Change("viewer", "member")}
        again = await enter(facade, await sign_in(facade, "vera@example.com"), wid)
        assert Permission.BACKUPS_WRITE in again.permissions

    async def test_the_last_admin_can_be_neither_demoted_nor_removed(
        self, facade: Strongroom
    ) -> None:
        """``last_admin`` for both; with a second admin the first may step down."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        me = user_id_of(ada)
        with pytest.raises(LastAdminError):
            await facade.members.change_role(ada, wid, me, "member")
        with pytest.raises(LastAdminError):
            await facade.members.remove(ada, wid, me)
        await join(facade, ada, wid, "grace@example.com", "admin")
        assert (await facade.members.change_role(ada, wid, me, "member")).role == "member"

    async def test_a_member_cannot_touch_an_admin(self, facade: Strongroom) -> None:
        """Without ``members:write`` a member cannot change anyone; refusals are denied
        events."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        with pytest.raises(MissingPermissionError, match="members:write"):
            await facade.members.remove(max_, wid, user_id_of(ada))
        [event] = await audit_events(facade, ada, "member.delete")
        assert (event.actor, event.outcome) == (max_.actor, Outcome.DENIED)

    async def test_a_role_holder_cannot_promote_beyond_their_permissions(
        self, facade: Strongroom
    ) -> None:
        """A custom role with ``members:write`` but not ``workspaces:write`` cannot make
        anyone admin: 403 naming the first permission lacking, audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(
            ada, wid, "people", "People", ["members:read", "members:write", "invitations:write"]
        )
        hr = await join(facade, ada, wid, "hr@example.com", "people")
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        with pytest.raises(MissingPermissionError, match="backups:read"):
            await facade.members.change_role(hr, wid, user_id_of(vera), "admin")
        denied = [
            e for e in await audit_events(facade, ada, "member.update") if e.actor == hr.actor
        ]
        assert [e.outcome for e in denied] == [Outcome.DENIED]

    async def test_a_foreign_member_is_not_found(self, facade: Strongroom) -> None:
        """Bob, admin of another workspace, is no member here."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        for user_id in (user_id_of(bob), uuid4()):
            with pytest.raises(NotFoundError, match="member"):
                await facade.members.change_role(ada, wid, user_id, "viewer")


class TestRoles:
    """Built-in and custom roles."""

    async def test_builtins_come_first_then_custom_roles(self, facade: Strongroom) -> None:
        """The list starts with admin, member, viewer; a created role follows, audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(ada, wid, "ops", "Operations", ["backups:read"])
        roles = await facade.roles.list(ada, wid)
        assert [r.slug for r in roles] == ["admin", "member", "viewer", "ops"]
        [event] = await audit_events(facade, ada, "role.create")
        assert event.changes == {
            "name": Change(None, "Operations"),
            "permissions": Change(None, ["backups:read"]),
        }

    async def test_builtin_slugs_and_roles_are_fixed(self, facade: Strongroom) -> None:
        """A built-in slug cannot be taken, nor a built-in role changed or deleted."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(NameTakenError):
            await facade.roles.create(ada, wid, "viewer", "Mine", ["backups:read"])
        with pytest.raises(InvalidStateError, match="built-in"):
            await facade.roles.update(ada, wid, "viewer", name="Watchers")
        with pytest.raises(InvalidStateError, match="built-in"):
            await facade.roles.delete(ada, wid, "member")

    async def test_a_held_role_cannot_be_deleted(self, facade: Strongroom) -> None:
        """A role a member holds, or a pending invitation gives, stays."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.roles.create(ada, wid, "ops", "Operations", ["backups:read"])
        await facade.invitations.create(ada, wid, "later@example.com", "ops")
        with pytest.raises(InvalidStateError, match="pending invitations"):
            await facade.roles.delete(ada, wid, "ops")
        await join(facade, ada, wid, "olga@example.com", "ops")
        with pytest.raises(InvalidStateError, match="members hold the role"):
            await facade.roles.delete(ada, wid, "ops")

    async def test_an_unknown_permission_is_validation_failed(self, facade: Strongroom) -> None:
        """Slugs outside the catalog are named in the refusal."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValidationFailedError, match="backups:destroy"):
            await facade.roles.create(ada, wid, "ops", "Operations", ["backups:destroy"])

    async def test_roles_are_per_workspace(self, facade: Strongroom) -> None:
        """Another workspace's custom role is not found here."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        await facade.roles.create(bob, globex, "ops", "Operations", ["backups:read"])
        with pytest.raises(NotFoundError, match="role"):
            await facade.roles.get(ada, wid, "ops")

    async def test_blocked_refuses_role_changes(self, facade: Strongroom) -> None:
        """Creating a role is a configuration write."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.roles.create(ada, wid, "ops", "Operations", ["backups:read"])


class TestInvitations:
    """Invitations: mailed, accepted by the invited person once, counted as seats."""

    async def test_an_invitation_is_mailed_and_accepted(self, facade: Strongroom) -> None:
        """The mail names the workspace and role; the invited person (email compared
        without case) joins with that role, audited; the invitation cannot be used again."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        invitation = await facade.invitations.create(
            ada, wid, "Vera@Example.com", "viewer", "https://strongroom.example"
        )
        mailer = facade.deps.mailer
        assert isinstance(mailer, OutboxMailer)
        [mail] = mailer.outbox
        assert mail.to.lower() == "vera@example.com"
        assert "'Acme' as viewer" in mail.body
        assert f"https://strongroom.example/v1/invitations/{invitation.id}/accept" in mail.body
        vera = await sign_in(facade, "vera@example.com")
        membership = await facade.invitations.accept(vera, invitation.id)
        assert (membership.workspace_id, membership.role) == (wid, "viewer")
        [event] = await audit_events(facade, ada, "invitation.accept")
        assert event.actor == vera.actor
        with pytest.raises(InvalidStateError, match="accepted"):
            await facade.invitations.accept(vera, invitation.id)

    async def test_another_email_cannot_accept(self, facade: Strongroom) -> None:
        """To anyone but the invited person the invitation does not exist."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        invitation = await facade.invitations.create(ada, wid, "vera@example.com", "viewer")
        mallory = await sign_in(facade, "mallory@example.com")
        with pytest.raises(NotFoundError, match="invitation"):
            await facade.invitations.accept(mallory, invitation.id)

    async def test_an_expired_invitation_is_refused(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Seven days later the invitation is ``expired``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        invitation = await facade.invitations.create(ada, wid, "vera@example.com", "viewer")
        clock.advance(timedelta(days=7, seconds=1))
        vera = await sign_in(facade, "vera@example.com")
        with pytest.raises(InvalidStateError, match="expired"):
            await facade.invitations.accept(vera, invitation.id)

    async def test_nobody_invites_beyond_their_own_permissions(self, facade: Strongroom) -> None:
        """A member cannot invite an admin (403, audited as denied); a viewer role is fine."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        with pytest.raises(MissingPermissionError):
            await facade.invitations.create(max_, wid, "eve@example.com", "admin")
        events = await audit_events(facade, ada, "invitation.create")
        assert [e.outcome for e in events if e.actor == max_.actor] == [Outcome.DENIED]
        await facade.invitations.create(max_, wid, "eve@example.com", "viewer")

    async def test_pending_invitations_hold_seats(self, facade: Strongroom) -> None:
        """With two seats, the admin and one pending invitation fill the workspace."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.MEMBERS_PER_WORKSPACE, 2)
        await facade.invitations.create(ada, wid, "vera@example.com", "viewer")
        with pytest.raises(QuotaExceededError, match="members_per_workspace"):
            await facade.invitations.create(ada, wid, "max@example.com", "viewer")

    async def test_an_unknown_role_is_validation_failed(self, facade: Strongroom) -> None:
        """An invitation names a role of this workspace."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValidationFailedError, match="role ghosts does not exist"):
            await facade.invitations.create(ada, wid, "vera@example.com", "ghosts")
