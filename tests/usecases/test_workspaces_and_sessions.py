"""Workspace and session use cases through the facade: creation with provisioning,
renames, deletion, quotas, the operator's billing and quota actions; signing in,
switching workspace and signing out."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock, MemoryBilling
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    ForbiddenError,
    MissingPermissionError,
    NotFoundError,
    QuotaExceededError,
    UnauthenticatedError,
    WrongWorkspaceError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR
from strongroom.domain.quotas import WORKSPACES_PER_USER, QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import api_key, audit_events, enter, join, sign_in, workspace_admin
from support.world import idp_token, memory_facade


class TestCreate:
    """``workspaces.create``: provisioned all-or-nothing, the creator its admin."""

    async def test_the_creator_becomes_admin_and_it_is_audited(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """The new workspace is in ``trial``, its creator an admin, ``workspace.create``
        written, and a customer record and a storage namespace provisioned for it."""
        person = await sign_in(facade, "ada@example.com")
        workspace = await facade.workspaces.create(person, "  Acme  ")
        assert (workspace.name, workspace.billing_state) == ("Acme", BillingState.TRIAL)
        memberships = (await facade.workspaces.memberships(person, PageRequest())).items
        assert [(m.workspace.id, m.role) for m in memberships] == [(workspace.id, "admin")]
        billing = facade.deps.billing
        assert isinstance(billing, MemoryBilling)
        assert billing.customers[workspace.customer_id] == workspace.id
        assert storage.object_path(workspace.storage_namespace).is_dir()
        admin = await enter(facade, person, workspace.id)
        [event] = await audit_events(facade, admin, "workspace.create")
        assert event.actor == person.actor
        assert event.changes == {"name": Change(None, "Acme")}

    async def test_a_machine_cannot_create_one(self, facade: Strongroom) -> None:
        """An API key is refused: only a person creates workspaces."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        key = await api_key(facade, ada, ["workspaces:read"])
        with pytest.raises(ForbiddenError, match="only a person can create a workspace"):
            await facade.workspaces.create(key, "Robots")

    async def test_a_person_creates_at_most_the_limit(self, facade: Strongroom) -> None:
        """``workspaces_per_user`` bounds how many workspaces one person creates."""
        person = await sign_in(facade, "ada@example.com")
        for number in range(WORKSPACES_PER_USER):
            await facade.workspaces.create(person, f"Acme {number}")
        with pytest.raises(QuotaExceededError, match="workspaces_per_user"):
            await facade.workspaces.create(person, "One too many")


class TestReadAndRename:
    """Reading, renaming and the order of the workspace checks."""

    async def test_rename_is_audited_with_the_change(self, facade: Strongroom) -> None:
        """A rename returns the renamed workspace and writes ``workspace.update``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        renamed = await facade.workspaces.rename(ada, wid, "Acme Corp")
        assert renamed.name == "Acme Corp"
        assert (await facade.workspaces.get(ada, wid)).name == "Acme Corp"
        [event] = await audit_events(facade, ada, "workspace.update")
        assert event.changes == {"name": Change("Acme", "Acme Corp")}

    async def test_a_member_cannot_rename(self, facade: Strongroom) -> None:
        """``workspaces:write`` is the admin's: a member is refused and the attempt is
        audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        with pytest.raises(MissingPermissionError, match="workspaces:write"):
            await facade.workspaces.rename(max_, wid, "Max's")
        [event] = await audit_events(facade, ada, "workspace.update")
        assert (event.actor, event.outcome) == (max_.actor, Outcome.DENIED)

    async def test_blocked_refuses_a_rename(self, facade: Strongroom) -> None:
        """A blocked workspace keeps its name."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.workspaces.rename(ada, wid, "Renamed")
        assert (await facade.workspaces.get(ada, wid)).name == "Acme"

    async def test_foreign_and_other_own_workspaces(self, facade: Strongroom) -> None:
        """Another person's workspace is not found like a random id; another of Ada's own
        workspaces is ``wrong_workspace`` for her session scoped elsewhere."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        _, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        for wid in (globex, uuid4()):
            with pytest.raises(NotFoundError, match="workspace not found"):
                await facade.workspaces.get(ada, wid)
        second = await facade.workspaces.create(await sign_in(facade, "ada@example.com"), "Two")
        with pytest.raises(WrongWorkspaceError):
            await facade.workspaces.get(ada, second.id)

    async def test_quotas_show_limits_and_usage(self, facade: Strongroom) -> None:
        """Every resource is reported; usage counts what exists, a set limit shows."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.invitations.create(ada, wid, "later@example.com", "viewer")
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 3)
        quotas = {q.resource: q for q in await facade.workspaces.quotas(ada, wid)}
        assert set(quotas) == set(QuotaResource)
        backups = quotas[QuotaResource.BACKUPS_PER_WORKSPACE]
        assert (backups.limit, backups.usage) == (3, 1)
        # The admin and the pending invitation hold a seat each.
        assert quotas[QuotaResource.MEMBERS_PER_WORKSPACE].usage == 2


class TestOperator:
    """The operator's actions, audited as ``system``."""

    async def test_billing_and_quota_changes_are_audited_as_system(
        self, facade: Strongroom
    ) -> None:
        """``billing.update`` and ``quota.update`` name the system actor and the change."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.WARNED)
        await facade.workspaces.set_quota(wid, QuotaResource.WORKERS_PER_WORKSPACE, 4)
        [billing] = await audit_events(facade, ada, "billing.update")
        assert billing.actor == SYSTEM_ACTOR
        assert billing.changes == {"billing_state": Change("trial", "warned")}
        [quota] = await audit_events(facade, ada, "quota.update")
        assert quota.actor == SYSTEM_ACTOR
        assert quota.changes is not None
        assert quota.changes["workers_per_workspace"].after == 4

    async def test_a_negative_limit_is_refused(self, facade: Strongroom) -> None:
        """A limit is 0 (unlimited) or more."""
        _, wid = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValueError, match="0"):
            await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, -1)


class TestDelete:
    """Deleting a workspace ends everything in it."""

    async def test_delete_ends_its_sessions_keys_and_records(
        self, facade: Strongroom, storage: LocalDiskStorage
    ) -> None:
        """Afterwards its sessions and keys no longer authenticate, and what was
        provisioned for it is released."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        key = await facade.api_keys.create(ada, "robot", ["backups:read"])
        workspace = await facade.workspaces.get(ada, wid)
        session_token = (await facade.sessions.switch(ada, wid)).token
        admin = await facade.access.authenticate(session_token)
        await facade.workspaces.delete(admin, wid)
        for token in (session_token, key.token):
            with pytest.raises(UnauthenticatedError):
                await facade.access.authenticate(token)
        billing = facade.deps.billing
        assert isinstance(billing, MemoryBilling)
        assert workspace.customer_id not in billing.customers
        assert not storage.object_path(workspace.storage_namespace).exists()
        with pytest.raises(NotFoundError):
            await facade.workspaces.find(wid)


class TestSessions:
    """Signing in, switching and signing out."""

    async def test_sign_in_twice_is_one_person(self, facade: Strongroom) -> None:
        """Two sign-ins of one identity give two sessions of the same user, unscoped."""
        first = await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))
        second = await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))
        assert first.user.id == second.user.id
        assert first.token != second.token
        assert first.workspace_id is None

    async def test_an_invalid_provider_token_is_unauthenticated(self, facade: Strongroom) -> None:
        """A token the identity provider did not issue signs nobody in."""
        with pytest.raises(UnauthenticatedError):
            await facade.sessions.sign_in("not-a-provider-token")

    async def test_switch_revokes_the_old_session_and_is_audited(self, facade: Strongroom) -> None:
        """The new session is scoped; the one used to switch stops working; the switch is
        audited in the workspace entered."""
        unscoped = await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))
        person = await facade.access.authenticate(unscoped.token)
        workspace = await facade.workspaces.create(person, "Acme")
        issued = await facade.sessions.switch(person, workspace.id)
        assert issued.workspace_id == workspace.id
        admin = await facade.access.authenticate(issued.token)
        [event] = await audit_events(facade, admin, "session.switch")
        assert event.target_id == str(issued.session.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(unscoped.token)

    async def test_switching_to_a_foreign_workspace_is_not_found(self, facade: Strongroom) -> None:
        """A workspace one does not belong to is not found; the session stays usable."""
        person = await sign_in(facade, "ada@example.com")
        _, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        with pytest.raises(NotFoundError, match="workspace"):
            await facade.sessions.switch(person, globex)
        mine = await facade.workspaces.create(person, "Acme")
        assert (await facade.sessions.switch(person, mine.id)).workspace_id == mine.id

    async def test_sign_out_ends_only_that_session(self, facade: Strongroom) -> None:
        """The session signed out stops working; another of the same person goes on."""
        tokens = [
            (await facade.sessions.sign_in(await idp_token(facade, "ada@example.com"))).token
            for _ in range(2)
        ]
        await facade.sessions.sign_out(await facade.access.authenticate(tokens[0]))
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(tokens[0])
        assert (await facade.access.authenticate(tokens[1])).user is not None

    async def test_machines_cannot_switch_or_sign_out(self, facade: Strongroom) -> None:
        """Only a person's session switches workspace or signs out."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        key = await api_key(facade, ada, ["backups:read"])
        with pytest.raises(ForbiddenError, match="switch"):
            await facade.sessions.switch(key, wid)
        with pytest.raises(ForbiddenError, match="sign out"):
            await facade.sessions.sign_out(key)

    async def test_a_removed_member_is_signed_out_of_the_workspace(
        self, facade: Strongroom
    ) -> None:
        """Once the membership ends, the session scoped to it no longer authenticates."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        person = await sign_in(facade, "max@example.com")
        invitation = await facade.invitations.create(ada, wid, "max@example.com", "member")
        await facade.invitations.accept(person, invitation.id)
        token = (await facade.sessions.switch(person, wid)).token
        max_ = await facade.access.authenticate(token)
        assert max_.user is not None
        await facade.members.remove(ada, wid, max_.user.id)
        with pytest.raises(UnauthenticatedError, match="membership has ended"):
            await facade.access.authenticate(token)


class TestQuotaAdmission:
    """Admission holds for any limit and any number of attempts."""

    @settings(max_examples=15)
    @given(limit=st.integers(1, 4), attempts=st.integers(0, 6))
    def test_exactly_the_limit_is_admitted(self, limit: int, attempts: int) -> None:
        """Of ``attempts`` creations under a limit, the first ``limit`` succeed, every
        later one is ``quota_exceeded``, and the reported usage is what was admitted."""

        async def scenario() -> None:
            facade = memory_facade(ManualClock())
            ada, wid = await workspace_admin(facade, "ada@example.com")
            await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, limit)
            admitted = 0
            for number in range(attempts):
                try:
                    await facade.backups.create(ada, wid, f"b{number}", BackupKind.MANUAL)
                    admitted += 1
                except QuotaExceededError:
                    assert admitted == limit
            assert admitted == min(limit, attempts)
            quotas = {q.resource: q for q in await facade.workspaces.quotas(ada, wid)}
            assert quotas[QuotaResource.BACKUPS_PER_WORKSPACE].usage == admitted

        asyncio.run(scenario())
