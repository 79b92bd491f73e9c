"""A backup's life after creation through the facade: when ``next_run_at`` is planned
(active, scheduled, not paused), pause and resume, a deleted backup's name and place, and
the billing gate lifting.

Moved down from ``tests/http/test_backups_lifecycle.py`` and
``tests/http/test_backups_create.py``, which keep the routes' status codes, bodies and
order of checks. The clock starts on Wednesday 2030-01-02 12:00 UTC (Paris is UTC+1 in
January)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupChanges, BackupKind, S3Source, Schedule
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import BillingRestrictedError, NameTakenError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import active_manual, audit_events, retention, workspace_admin

SCHEDULE = Schedule("0 3 * * *", "Europe/Paris")
CLOUD_COMPLETE: dict[str, Any] = {
    "source": S3Source(endpoint="https://s3.example.com:9000", bucket="prod-data"),
    "credentials": {"access_key_id": "AKIA-ID-0d1e2f", "secret_access_key": "s3-secret-9f8e7d6c"},
    "retention": retention("P30D", "P7D"),
}


def utc(*parts: int) -> datetime:
    """A UTC instant."""
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


async def cloud_draft(facade: Strongroom, admin: Caller) -> UUID:
    """A new cloud backup (a draft) of the admin's workspace: its id."""
    backup = await facade.backups.create(
        admin, admin.scoped_workspace(), "Nightly", BackupKind.CLOUD
    )
    return backup.id


class TestSchedule:
    """``next_run_at`` is set only while a backup is active, scheduled and not paused."""

    async def test_a_draft_has_no_next_run(self, facade: Strongroom) -> None:
        """A schedule on a draft is stored but nothing is planned."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        patched = await facade.backups.update(
            ada, await cloud_draft(facade, ada), BackupChanges(schedule=SCHEDULE)
        )
        assert (patched.schedule, patched.state, patched.next_run_at) == (
            SCHEDULE,
            "draft",
            None,
        )

    async def test_activation_plans_the_next_run(self, facade: Strongroom) -> None:
        """03:00 in Paris (UTC+1 in January) after 12:00 UTC is 02:00 UTC the next day."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_draft(facade, ada)
        await facade.backups.update(ada, backup, BackupChanges(schedule=SCHEDULE))
        active = await facade.backups.update(ada, backup, BackupChanges(**CLOUD_COMPLETE))
        assert active.state == "active"
        assert active.next_run_at == utc(2030, 1, 3, 2, 0)
        assert (await facade.backups.get(ada, backup)).next_run_at == utc(2030, 1, 3, 2, 0)

    async def test_a_schedule_in_the_activating_patch(self, facade: Strongroom) -> None:
        """Schedule and completion in one change give a next run at once."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        changes = BackupChanges(**CLOUD_COMPLETE, schedule=Schedule("30 * * * *", "UTC"))
        active = await facade.backups.update(ada, await cloud_draft(facade, ada), changes)
        assert active.next_run_at == utc(2030, 1, 2, 12, 30)

    async def test_clearing_the_schedule_clears_the_next_run(self, facade: Strongroom) -> None:
        """``schedule: null`` removes the schedule and the planned run; still active."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_draft(facade, ada)
        await facade.backups.update(ada, backup, BackupChanges(**CLOUD_COMPLETE, schedule=SCHEDULE))
        cleared = await facade.backups.update(ada, backup, BackupChanges(schedule=None))
        assert (cleared.schedule, cleared.next_run_at, cleared.state) == (None, None, "active")

    async def test_pause_stops_planning_and_resume_plans_again(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Paused: no next run, state kept, ``updated_at`` now; resumed later: the next run
        after that moment."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_draft(facade, ada)
        await facade.backups.update(ada, backup, BackupChanges(**CLOUD_COMPLETE, schedule=SCHEDULE))
        clock.advance(timedelta(hours=1))
        paused = await facade.backups.pause(ada, backup)
        assert (paused.paused, paused.state, paused.next_run_at) == (True, "active", None)
        assert paused.updated_at == utc(2030, 1, 2, 13, 0)
        clock.advance(utc(2030, 1, 3, 5, 0) - clock.now())
        resumed = await facade.backups.resume(ada, backup)
        assert resumed.paused is False
        assert resumed.next_run_at == utc(2030, 1, 4, 2, 0)
        assert await facade.backups.get(ada, backup) == resumed

    async def test_a_schedule_set_while_paused_plans_nothing(self, facade: Strongroom) -> None:
        """A paused active backup keeps its schedule but no next run."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_draft(facade, ada)
        await facade.backups.update(ada, backup, BackupChanges(**CLOUD_COMPLETE))
        await facade.backups.pause(ada, backup)
        patched = await facade.backups.update(ada, backup, BackupChanges(schedule=SCHEDULE))
        assert (patched.schedule, patched.next_run_at) == (SCHEDULE, None)


class TestPauseResume:
    """Pause and resume: idempotent, audited, never an error on an unpaused backup."""

    async def test_resume_of_an_active_backup_changes_nothing(self, facade: Strongroom) -> None:
        """Resuming a backup that is not paused answers it unchanged."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P7D")
        active = await facade.backups.get(ada, backup)
        assert await facade.backups.resume(ada, backup) == active

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    async def test_repeating_the_action_answers_the_same_backup(
        self, facade: Strongroom, verb: str
    ) -> None:
        """Twice the same action: the same backup, still active."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P7D")
        action = getattr(facade.backups, verb)
        first = await action(ada, backup)
        assert await action(ada, backup) == first
        assert (first.paused, first.state) == (verb == "pause", "active")

    async def test_actions_are_audited_naming_the_backup(self, facade: Strongroom) -> None:
        """``backup.pause`` and ``backup.resume`` name the backup and the ``paused`` change."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.backups.pause(ada, backup.id)
        await facade.backups.resume(ada, backup.id)
        for action, after in (("backup.pause", True), ("backup.resume", False)):
            [event] = await audit_events(facade, ada, action)
            assert (event.target_type, event.target_id) == ("backup", str(backup.id))
            assert event.changes is not None
            assert event.changes["paused"] == Change(not after, after)


class TestCreateAndDelete:
    """What a create records and what a delete frees."""

    async def test_a_create_is_audited_as_the_caller_naming_the_backup(
        self, facade: Strongroom
    ) -> None:
        """One ``backup.create`` by the caller, target the backup, the name's change."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        [event] = await audit_events(facade, ada, "backup.create")
        assert (event.actor, event.outcome) == (ada.actor, Outcome.SUCCESS)
        assert (event.target_type, event.target_id) == ("backup", str(backup.id))
        assert event.changes is not None
        assert event.changes["name"] == Change(None, "Nightly")

    async def test_a_deleted_backup_frees_its_place_and_its_name(self, facade: Strongroom) -> None:
        """With a limit of 1, deleting the backup lets a new one take its name."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 1)
        first = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.backups.delete(ada, first.id)
        again = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        assert again.id != first.id
        [event] = await audit_events(facade, ada, "backup.delete")
        assert (event.target_type, event.target_id) == ("backup", str(first.id))


class TestChange:
    """What a change that names no field or a taken name does."""

    async def test_a_change_naming_nothing_changes_nothing(self, facade: Strongroom) -> None:
        """An empty change answers the backup as it was."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        assert await facade.backups.update(ada, backup.id, BackupChanges()) == backup
        assert await facade.backups.get(ada, backup.id) == backup

    async def test_a_rename_to_a_taken_name_conflicts_but_the_own_name_is_free(
        self, facade: Strongroom
    ) -> None:
        """Another backup's name in any case is ``name_taken`` and the name stays; the own
        name in another case is accepted."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        weekly = await facade.backups.create(ada, wid, "Weekly", BackupKind.MANUAL)
        with pytest.raises(NameTakenError):
            await facade.backups.update(ada, weekly.id, BackupChanges(name="NIGHTLY"))
        assert (await facade.backups.get(ada, weekly.id)).name == "Weekly"
        renamed = await facade.backups.update(ada, weekly.id, BackupChanges(name="WEEKLY"))
        assert renamed.name == "WEEKLY"


class TestBilling:
    """Blocked refuses every write, a retention change too; leaving it allows them again."""

    async def test_blocked_refuses_a_retention_change_and_lists_the_same(
        self, facade: Strongroom
    ) -> None:
        """The retention is not set, and the list still holds the backup alone."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        changes = BackupChanges(retention=retention("P30D", "P7D"))
        with pytest.raises(BillingRestrictedError, match="workspace billing state is blocked"):
            await facade.backups.update(ada, backup.id, changes)
        assert await facade.backups.get(ada, backup.id) == backup
        page = await facade.backups.list_in(ada, wid, PageRequest(200))
        assert [b.id for b in page.items] == [backup.id]

    async def test_writes_resume_when_unblocked(self, facade: Strongroom) -> None:
        """Leaving ``blocked`` allows writes again on the next call."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.backups.create(ada, wid, "n", BackupKind.MANUAL)
        await facade.workspaces.set_billing_state(wid, BillingState.ACTIVE)
        assert (await facade.backups.create(ada, wid, "n", BackupKind.MANUAL)).name == "n"
