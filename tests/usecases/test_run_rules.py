"""Run rules through the facade: what a new run holds, which kind starts or triggers, in
which state, the billing gate of new runs in every billing state, who may read, trigger
and cancel, and what is audited.

Moved down from ``tests/http/test_runs.py`` and ``tests/http/test_runs_list_and_cancel.py``,
which keep the status codes, the run's wire shape and the order of checks."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from test_run_listing_and_cancelling import active_cloud

from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    InvalidStateError,
    MissingPermissionError,
    NotFoundError,
    ValidationFailedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.runs import RunState, RunTrigger
from strongroom.ports.driving import Strongroom
from support.people import active_manual, audit_events, join, workspace_admin

BILLING = [
    (BillingState.TRIAL, True),
    (BillingState.ACTIVE, True),
    (BillingState.WARNED, True),
    (BillingState.STOPPED, False),
    (BillingState.BLOCKED, False),
]


async def draft(facade: Strongroom, admin: Caller, kind: BackupKind, name: str = "Draft") -> UUID:
    """A new backup of ``kind`` (a draft): its id."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, kind)
    return backup.id


class TestStart:
    """``runs.start``: the client of a manual backup starts its run."""

    async def test_a_new_run_is_running_since_its_creation_with_nothing_counted(
        self, facade: Strongroom
    ) -> None:
        """Running, trigger manual, started when created, no worker, error, lease or
        progress; first attempt; audited ``run.create`` naming the run and its backup."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        assert (run.backup_id, run.workspace_id) == (backup, wid)
        assert (run.state, run.trigger) == (RunState.RUNNING, RunTrigger.MANUAL)
        assert run.started_at == run.created_at
        assert (run.finished_at, run.worker_id, run.error) == (None, None, None)
        assert (run.artifact_count, run.bytes) == (0, 0)
        assert (run.attempt, run.lease_expires_at) == (1, None)
        assert (run.cancel_requested, run.progress) == (False, None)
        assert await facade.runs.get(ada, run.id) == run
        [event] = await audit_events(facade, ada, "run.create")
        assert (event.target_type, event.target_id) == ("run", str(run.id))
        assert event.changes is not None
        assert event.changes["backup_id"] == Change(None, str(backup))
        assert event.outcome is Outcome.SUCCESS

    @pytest.mark.parametrize("kind", [BackupKind.CLOUD, BackupKind.LOCAL])
    async def test_another_kind_is_validation_failed_even_as_a_draft(
        self, facade: Strongroom, kind: BackupKind
    ) -> None:
        """Runs are started by the client only for manual backups."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValidationFailedError, match="manual"):
            await facade.runs.start(ada, await draft(facade, ada, kind))

    async def test_another_workspaces_backup_is_not_found(self, facade: Strongroom) -> None:
        """Bob's backup and one that does not exist are both ``not_found``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        for backup in (await active_manual(facade, bob), uuid4()):
            with pytest.raises(NotFoundError):
                await facade.runs.start(ada, backup)

    @pytest.mark.parametrize(("state", "allowed"), BILLING)
    async def test_billing_gates_new_runs(
        self, facade: Strongroom, state: BillingState, allowed: bool
    ) -> None:
        """Stopped and blocked refuse new runs, naming the state and ``new runs``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        await facade.workspaces.set_billing_state(wid, state)
        if allowed:
            assert (await facade.runs.start(ada, backup)).state is RunState.RUNNING
            return
        with pytest.raises(BillingRestrictedError, match=state.value) as refused:
            await facade.runs.start(ada, backup)
        assert "new runs" in str(refused.value)


class TestRead:
    """Reading runs: a viewer may, and billing never refuses it."""

    async def test_a_viewer_reads_a_run(self, facade: Strongroom) -> None:
        """A viewer holds ``backups:read`` and ``runs:read``: the same run."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        assert await facade.runs.get(vera, run.id) == run

    async def test_a_blocked_workspace_still_lists_its_runs(self, facade: Strongroom) -> None:
        """Listing a backup's runs is a read."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        page = await facade.runs.list_for_backup(ada, backup, None, PageRequest())
        assert [listed.id for listed in page.items] == [run.id]


class TestTrigger:
    """``runs.trigger``: a cloud (or local) backup's run, queued by ``api``."""

    async def test_an_active_cloud_backup_gets_a_queued_api_run(self, facade: Strongroom) -> None:
        """Queued, not started, readable; audited ``backup.trigger`` naming the backup with
        the new run's id as its change."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_cloud(facade, ada, wid)
        run = await facade.runs.trigger(ada, backup)
        assert (run.state, run.trigger, run.backup_id) == (RunState.QUEUED, RunTrigger.API, backup)
        assert run.started_at is None
        assert await facade.runs.get(ada, run.id) == run
        [event] = await audit_events(facade, ada, "backup.trigger")
        assert (event.target_type, event.target_id) == ("backup", str(backup))
        assert event.changes == {"run_id": Change(None, str(run.id))}

    async def test_a_manual_backup_is_validation_failed_even_as_a_draft(
        self, facade: Strongroom
    ) -> None:
        """A manual backup's client starts its runs."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValidationFailedError, match="manual"):
            await facade.runs.trigger(ada, await draft(facade, ada, BackupKind.MANUAL))

    async def test_a_draft_or_paused_backup_is_invalid_state(self, facade: Strongroom) -> None:
        """``invalid_state`` naming why."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(InvalidStateError, match="draft"):
            await facade.runs.trigger(ada, await draft(facade, ada, BackupKind.CLOUD))
        paused = await active_cloud(facade, ada, wid, "Paused")
        await facade.backups.pause(ada, paused)
        with pytest.raises(InvalidStateError, match="paused"):
            await facade.runs.trigger(ada, paused)

    @pytest.mark.parametrize(("state", "allowed"), BILLING)
    async def test_billing_gates_triggered_runs(
        self, facade: Strongroom, state: BillingState, allowed: bool
    ) -> None:
        """Stopped and blocked refuse a trigger naming the state."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_cloud(facade, ada, wid)
        await facade.workspaces.set_billing_state(wid, state)
        if allowed:
            assert (await facade.runs.trigger(ada, backup)).state is RunState.QUEUED
            return
        with pytest.raises(BillingRestrictedError, match=state.value):
            await facade.runs.trigger(ada, backup)

    async def test_another_workspaces_backup_is_not_found_and_nothing_is_audited(
        self, facade: Strongroom
    ) -> None:
        """Ada triggering Bob's backup: ``not_found``; neither trail holds a trigger."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        theirs = await active_cloud(facade, bob, globex)
        with pytest.raises(NotFoundError):
            await facade.runs.trigger(ada, theirs)
        assert await audit_events(facade, bob, "backup.trigger") == []
        assert await audit_events(facade, ada, "backup.trigger") == []

    async def test_a_viewer_is_refused_naming_backups_write(self, facade: Strongroom) -> None:
        """Without ``backups:write`` or ``backups:trigger``: refused naming the first, and
        the refusal audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_cloud(facade, ada, wid)
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        with pytest.raises(MissingPermissionError, match="missing permission backups:write"):
            await facade.runs.trigger(vera, backup)
        [event] = await audit_events(facade, ada, "backup.trigger")
        assert (event.actor, event.outcome) == (vera.actor, Outcome.DENIED)


class TestCancel:
    """Who may cancel, and what a foreign caller learns."""

    async def test_a_member_cancels_with_the_trigger_permission(self, facade: Strongroom) -> None:
        """The member role holds ``backups:trigger``: a running run is asked to stop."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        assert (await facade.runs.cancel(max_, run.id)).cancel_requested is True

    async def test_a_foreign_run_is_refused_like_a_missing_one(self, facade: Strongroom) -> None:
        """Bob cancelling Ada's run hears the same as for a run that does not exist."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        messages = []
        for run_id in (run.id, uuid4()):
            with pytest.raises(NotFoundError) as refused:
                await facade.runs.cancel(bob, run_id)
            messages.append(str(refused.value))
        assert messages[0] == messages[1]
        assert await facade.runs.get(ada, run.id) == run
