"""Workspace rules through the facade: the per-person quota of created workspaces, billing
gating the rename and never a read, the trial start, and what a delete ends and keeps.

Moved down from ``tests/http/test_workspaces.py``, which keeps the wire shapes, the status
codes and the order of checks."""

from __future__ import annotations

import pytest

from strongroom.adapters.memory.services import ManualClock, MemoryBilling, MemoryNamespaces
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    NotFoundError,
    QuotaExceededError,
    UnauthenticatedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from support.people import audit_events, enter, join, sign_in, workspace_admin
from support.world import memory_facade


async def workspace_names(facade: Strongroom, person: Caller) -> list[str]:
    """The names of the workspaces ``person`` belongs to."""
    page = await facade.workspaces.memberships(person, PageRequest(200))
    return [membership.workspace.name for membership in page.items]


class TestCreationQuota:
    """``workspaces_per_user``: five workspaces created by one person."""

    async def test_the_sixth_is_refused_and_a_delete_frees_a_slot(self, facade: Strongroom) -> None:
        """The sixth is ``quota_exceeded`` naming ``workspaces_per_user`` and 5; deleting
        one lets exactly one more be created."""
        person = await sign_in(facade, "ada@example.com")
        made = [await facade.workspaces.create(person, f"W{n}") for n in range(5)]
        with pytest.raises(QuotaExceededError) as refused:
            await facade.workspaces.create(person, "W5")
        assert "workspaces_per_user" in str(refused.value)
        assert "5" in str(refused.value)
        assert len(await workspace_names(facade, person)) == 5
        first = await enter(facade, person, made[0].id)
        await facade.workspaces.delete(first, made[0].id)
        again = await sign_in(facade, "ada@example.com")
        await facade.workspaces.create(again, "W5")
        with pytest.raises(QuotaExceededError):
            await facade.workspaces.create(again, "W6")

    async def test_workspaces_joined_do_not_count(self, facade: Strongroom) -> None:
        """Three workspaces Ada merely belongs to leave her five of her own."""
        eve = await sign_in(facade, "eve@example.com")
        for number in range(3):
            workspace = await facade.workspaces.create(eve, f"E{number}")
            owner = await enter(facade, eve, workspace.id)
            await join(facade, owner, workspace.id, "ada@example.com", "member")
        ada = await sign_in(facade, "ada@example.com")
        for number in range(5):
            await facade.workspaces.create(ada, f"A{number}")
        assert len(await workspace_names(facade, ada)) == 8


class TestBilling:
    """The billing state gates the rename, never a read (contract section 4)."""

    @pytest.mark.parametrize(
        "state",
        [BillingState.TRIAL, BillingState.ACTIVE, BillingState.WARNED, BillingState.STOPPED],
    )
    async def test_a_rename_is_allowed_outside_blocked(
        self, facade: Strongroom, state: BillingState
    ) -> None:
        """Trial, active, warned and stopped allow a rename."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, state)
        assert (await facade.workspaces.rename(ada, wid, "New")).name == "New"

    async def test_blocked_refuses_a_rename_naming_the_state(self, facade: Strongroom) -> None:
        """``billing_restricted`` naming ``blocked``; the name stays and no success is
        audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com", "Acme")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError, match="blocked"):
            await facade.workspaces.rename(ada, wid, "New")
        assert (await facade.workspaces.get(ada, wid)).name == "Acme"
        events = await audit_events(facade, ada, "workspace.update")
        assert [e for e in events if e.outcome is Outcome.SUCCESS] == []

    @pytest.mark.parametrize("state", list(BillingState))
    async def test_reads_are_never_refused(self, facade: Strongroom, state: BillingState) -> None:
        """The workspace list, the workspace, its quotas and its audit trail answer in
        every billing state."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, state)
        assert await workspace_names(facade, ada) == ["Acme"]
        assert (await facade.workspaces.get(ada, wid)).id == wid
        assert await facade.workspaces.quotas(ada, wid)
        page = await facade.audit.events(ada, wid, AuditFilter(), PageRequest())
        assert page.items

    async def test_new_workspaces_start_in_trial(self, facade: Strongroom) -> None:
        """The first billing change records ``from: trial``, by the system, with no
        request id."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.ACTIVE)
        [event] = await audit_events(facade, ada, "billing.update")
        assert event.changes == {"billing_state": Change("trial", "active")}
        assert (event.actor, event.request_id, event.outcome) == (
            SYSTEM_ACTOR,
            None,
            Outcome.SUCCESS,
        )


class TestDelete:
    """What a delete ends, keeps and releases."""

    async def test_a_blocked_workspace_is_deleted_ending_only_its_scoped_sessions(
        self, facade: Strongroom
    ) -> None:
        """Allowed when blocked; every session scoped to it ends; its former members'
        unscoped sessions still work, list nothing and cannot enter it."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await join(facade, ada, wid, "bob@example.com", "member")
        tokens = {}
        for email in ("ada@example.com", "bob@example.com"):
            person = await sign_in(facade, email)
            tokens[email] = (
                (await facade.sessions.switch(person, wid)).token,
                await sign_in(facade, email),
            )
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        await facade.workspaces.delete(ada, wid)
        for scoped, unscoped in tokens.values():
            with pytest.raises(UnauthenticatedError):
                await facade.access.authenticate(scoped)
            assert await workspace_names(facade, unscoped) == []
            with pytest.raises(NotFoundError):
                await facade.sessions.switch(unscoped, wid)

    async def test_a_delete_releases_the_provisioned_resources(self) -> None:
        """The customer record and the storage namespace are released (the in-memory
        namespaces, to see them all)."""
        facade = memory_facade(ManualClock())
        billing = facade.deps.billing
        namespaces = facade.deps.namespaces
        assert isinstance(billing, MemoryBilling)
        assert isinstance(namespaces, MemoryNamespaces)
        ada, wid = await workspace_admin(facade, "ada@example.com")
        assert list(billing.customers.values()) == [wid]
        assert len(namespaces.namespaces) == 1
        await facade.workspaces.delete(ada, wid)
        assert billing.customers == {}
        assert namespaces.namespaces == set()
