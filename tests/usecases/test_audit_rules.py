"""What the audit trail records and shows, through the facade: newest first, refusals as
``denied`` without changes (only on objects the caller can see), the operator's billing
changes as the system, one workspace's events never in another's, and the filters.

Moved down from ``tests/http/test_audit.py``, which keeps the event's wire shape, the
request ids, the parsing of the filters and the order of checks."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import AuditEvent, Change, Outcome
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import MissingPermissionError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from support.people import enter, join, sign_in, workspace_admin

SECOND = timedelta(seconds=1)


async def admin_of(
    facade: Strongroom, clock: ManualClock, email: str, name: str = "Acme"
) -> tuple[Caller, UUID]:
    """``email`` creates a workspace and, a second later, enters it: their admin caller and
    its id (the second keeps the two events in order)."""
    person = await sign_in(facade, email)
    workspace = await facade.workspaces.create(person, name)
    clock.advance(SECOND)
    return await enter(facade, person, workspace.id), workspace.id


async def trail(
    facade: Strongroom, admin: Caller, workspace_id: UUID, filters: AuditFilter | None = None
) -> list[AuditEvent]:
    """The workspace's events (one page of up to 200), newest first."""
    page = await facade.audit.events(
        admin, workspace_id, filters or AuditFilter(), PageRequest(200)
    )
    return list(page.items)


async def test_events_come_newest_first(facade: Strongroom, clock: ManualClock) -> None:
    """Five renames: the newest first, their times descending."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    for number in range(5):
        clock.advance(SECOND)
        await facade.workspaces.rename(ada, wid, f"N{number}")
    events = await trail(facade, ada, wid, AuditFilter(action="workspace.update"))
    assert [e.changes["name"].after for e in events if e.changes] == ["N4", "N3", "N2", "N1", "N0"]
    times = [e.occurred_at for e in events]
    assert times == sorted(times, reverse=True)


async def test_denied_attempts_are_recorded_without_changes(
    facade: Strongroom, clock: ManualClock
) -> None:
    """A member's refused rename and delete are ``denied`` with no changes, after the
    member's own successful switch."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    bob = await join(facade, ada, wid, "bob@example.com", "member")
    clock.advance(SECOND)
    with pytest.raises(MissingPermissionError):
        await facade.workspaces.rename(bob, wid, "Mine")
    clock.advance(SECOND)
    with pytest.raises(MissingPermissionError):
        await facade.workspaces.delete(bob, wid)
    assert bob.actor.id is not None
    denied = await trail(facade, ada, wid, AuditFilter(actor_id=bob.actor.id))
    assert [(e.action, e.outcome, e.changes) for e in denied[:2]] == [
        ("workspace.delete", Outcome.DENIED, None),
        ("workspace.update", Outcome.DENIED, None),
    ]
    # Before them, in one instant: joining (the acceptance) and entering (the switch).
    assert {(e.action, e.outcome) for e in denied[2:]} == {
        ("invitation.accept", Outcome.SUCCESS),
        ("session.switch", Outcome.SUCCESS),
    }


async def test_billing_changes_are_the_systems(facade: Strongroom, clock: ManualClock) -> None:
    """The operator's billing changes are ``billing.update`` by the system actor."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    await facade.workspaces.set_billing_state(wid, BillingState.WARNED)
    clock.advance(SECOND)
    await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
    events = await trail(facade, ada, wid, AuditFilter(action="billing.update"))
    assert [e.changes for e in events] == [
        {"billing_state": Change("warned", "blocked")},
        {"billing_state": Change("trial", "warned")},
    ]
    assert {e.actor for e in events} == {SYSTEM_ACTOR}


async def test_trails_do_not_cross_workspaces(facade: Strongroom) -> None:
    """Eve's rename of her workspace is nowhere in Ada's trail."""
    ada, first = await workspace_admin(facade, "ada@example.com", "First")
    eve, second = await workspace_admin(facade, "eve@example.com", "Second")
    await facade.workspaces.rename(eve, second, "S2")
    assert all(e.target_id != str(second) for e in await trail(facade, ada, first))
    assert await trail(facade, ada, first, AuditFilter(action="workspace.update")) == []


class TestFilters:
    """``action``, ``actor_id`` and ``since``, alone or combined."""

    async def test_action(self, facade: Strongroom) -> None:
        """Only that action's events; an action nobody performed gives none."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        switched = await trail(facade, ada, wid, AuditFilter(action="session.switch"))
        assert [e.action for e in switched] == ["session.switch"]
        assert await trail(facade, ada, wid, AuditFilter(action="backup.create")) == []

    async def test_actor(self, facade: Strongroom, clock: ManualClock) -> None:
        """Only that actor's events (not the system's billing change); an unknown actor
        gives none."""
        ada, wid = await admin_of(facade, clock, "ada@example.com")
        clock.advance(SECOND)
        await facade.workspaces.set_billing_state(wid, BillingState.ACTIVE)
        assert ada.actor.id is not None
        mine = await trail(facade, ada, wid, AuditFilter(actor_id=ada.actor.id))
        assert [e.action for e in mine] == ["session.switch", "workspace.create"]
        assert await trail(facade, ada, wid, AuditFilter(actor_id=uuid4())) == []

    async def test_since(self, facade: Strongroom, clock: ManualClock) -> None:
        """Only events at or after ``since``; filters combine."""
        ada, wid = await admin_of(facade, clock, "ada@example.com")
        every = await trail(facade, ada, wid)
        oldest = every[-1].occurred_at
        future = clock.now() + timedelta(hours=1)
        past = oldest - timedelta(days=365)
        assert await trail(facade, ada, wid, AuditFilter(since=future)) == []
        assert await trail(facade, ada, wid, AuditFilter(since=past)) == every
        assert (await trail(facade, ada, wid, AuditFilter(since=oldest)))[-1] == every[-1]
        combined = AuditFilter(since=past, action="workspace.create")
        assert await trail(facade, ada, wid, combined) == every[-1:]


async def test_only_refusals_on_visible_objects_are_recorded(facade: Strongroom) -> None:
    """A viewer refused on its own workspace's backup, on another workspace's and on one
    that does not exist: only the first is audited, in its own workspace."""
    owner, first = await workspace_admin(facade, "ada@example.com", "First")
    theirs = await facade.backups.create(owner, first, "theirs", BackupKind.MANUAL)
    admin, second = await workspace_admin(facade, "eve@example.com", "Second")
    mine = await facade.backups.create(admin, second, "mine", BackupKind.MANUAL)
    viewer = await join(facade, admin, second, "vic@example.com", "viewer")
    for backup_id in (theirs.id, uuid4(), mine.id):
        with pytest.raises(MissingPermissionError):
            await facade.backups.update(viewer, backup_id, BackupChanges(name="x"))
        with pytest.raises(MissingPermissionError):
            await facade.backups.delete(viewer, backup_id)
    denied = [e for e in await trail(facade, admin, second) if e.outcome is Outcome.DENIED]
    assert sorted((e.action, e.target_type, e.target_id) for e in denied) == [
        ("backup.delete", "backup", str(mine.id)),
        ("backup.update", "backup", str(mine.id)),
    ]
    assert [e for e in await trail(facade, owner, first) if e.outcome is Outcome.DENIED] == []
