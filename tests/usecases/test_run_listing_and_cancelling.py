"""A backup's runs listed and cancelled through the facade (contract 11): newest first,
by state, page by page, scoped to the caller's workspace; a queued run cancelled at once,
a running one asked to stop, a finished one refused; every cancel audited."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID, uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupChanges, BackupKind, S3Source
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    InvalidStateError,
    MissingPermissionError,
    NotFoundError,
)
from strongroom.domain.pagination import Page, PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run, RunState
from strongroom.ports.driving import Strongroom
from support.people import active_manual, api_key, audit_events, join, retention, workspace_admin
from support.world import memory_facade

SECOND = timedelta(seconds=1)


async def active_cloud(
    facade: Strongroom, admin: Caller, workspace_id: UUID, name: str = "Cloud"
) -> UUID:
    """An active cloud backup: ``trigger`` queues its runs."""
    cloud = await facade.backups.create(admin, workspace_id, name, BackupKind.CLOUD)
    changes = BackupChanges(
        source=S3Source(endpoint="https://s3.example.com", bucket="data"),
        credentials={"access_key_id": "id", "secret_access_key": "secret"},
        retention=retention("P30D", "PT0S"),
    )
    await facade.backups.update(admin, cloud.id, changes)
    return cloud.id


async def every_page(
    facade: Strongroom, caller: Caller, backup_id: UUID, state: RunState | None, limit: int
) -> list[Run]:
    """Every run the list shows, following ``next_cursor`` to the end."""
    seen: list[Run] = []
    page: Page[Run] = await facade.runs.list_for_backup(
        caller, backup_id, state, PageRequest(limit)
    )
    seen.extend(page.items)
    while page.next_cursor is not None:
        page = await facade.runs.list_for_backup(
            caller, backup_id, state, PageRequest(limit, page.next_cursor)
        )
        seen.extend(page.items)
    return seen


class TestListing:
    """``GET /v1/backups/{bid}/runs``."""

    async def test_runs_come_newest_first_and_by_state(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """Newest first across pages; ``state`` keeps one state; another backup's runs
        never appear."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        cloud = await active_cloud(facade, ada, wid)
        other = await active_cloud(facade, ada, wid, "Other")
        made = []
        for _ in range(5):
            clock.advance(SECOND)
            made.append(await facade.runs.trigger(ada, cloud))
        await facade.runs.trigger(ada, other)
        cancelled = await facade.runs.cancel(ada, made[1].id)
        newest_first = [run.id for run in reversed(made)]
        assert [run.id for run in await every_page(facade, ada, cloud, None, 2)] == newest_first
        assert await every_page(facade, ada, cloud, RunState.CANCELLED, 2) == [cancelled]
        queued = await every_page(facade, ada, cloud, RunState.QUEUED, 50)
        assert [run.id for run in queued] == [i for i in newest_first if i != cancelled.id]
        assert await every_page(facade, ada, cloud, RunState.SUCCEEDED, 50) == []

    async def test_a_backup_the_caller_cannot_see_is_not_found(self, facade: Strongroom) -> None:
        """Another workspace's backup is 404 exactly like one that does not exist; a worker
        sees only the runs of a backup assigned to it."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com")
        backup = await active_manual(facade, ada)
        await facade.runs.start(ada, backup)
        for backup_id in (backup, uuid4()):
            with pytest.raises(NotFoundError, match="backup"):
                await facade.runs.list_for_backup(bob, backup_id, None, PageRequest())
        issued = await facade.workers.create(ada, "rack")
        worker = await facade.access.authenticate(issued.token)
        with pytest.raises(NotFoundError, match="backup"):
            await facade.runs.list_for_backup(worker, backup, None, PageRequest())

    async def test_runs_read_or_backups_read_is_enough(self, facade: Strongroom) -> None:
        """An API key with either permission lists; one with neither is refused."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada)
        run = await facade.runs.start(ada, backup)
        for permission in ("runs:read", "backups:read"):
            key = await api_key(facade, ada, [permission])
            page = await facade.runs.list_for_backup(key, backup, None, PageRequest())
            assert page.items == [run]
        uploader = await api_key(facade, ada, ["artifacts:upload"])
        with pytest.raises(MissingPermissionError):
            await facade.runs.list_for_backup(uploader, backup, None, PageRequest())

    @settings(max_examples=25, deadline=None)
    @given(
        steps=st.lists(st.sampled_from(["trigger", "cancel newest", "cancel oldest"]), max_size=9),
        limit=st.integers(1, 4),
        state=st.none() | st.sampled_from([RunState.QUEUED, RunState.CANCELLED]),
    )
    def test_the_pages_hold_every_run_once(
        self, steps: list[str], limit: int, state: RunState | None
    ) -> None:
        """For any runs triggered and cancelled in the same second or not, the pages of any
        size hold each run of the state exactly once, newest first by (created_at, id)."""

        async def scenario() -> None:
            clock = ManualClock()
            facade = memory_facade(clock)
            ada, wid = await workspace_admin(facade, "ada@example.com")
            cloud = await active_cloud(facade, ada, wid)
            runs: dict[UUID, Run] = {}
            for number, step in enumerate(steps):
                if number % 3 == 0:
                    clock.advance(SECOND)  # ties in created_at, broken by id
                queued = [r for r in runs.values() if r.state is RunState.QUEUED]
                if step == "trigger" or not queued:
                    run = await facade.runs.trigger(ada, cloud)
                else:
                    target = max if step == "cancel newest" else min
                    chosen = target(queued, key=lambda r: (r.created_at, r.id))
                    run = await facade.runs.cancel(ada, chosen.id)
                runs[run.id] = run
            expected = sorted(
                (r for r in runs.values() if state is None or r.state is state),
                key=lambda r: (r.created_at, r.id),
                reverse=True,
            )
            assert await every_page(facade, ada, cloud, state, limit) == expected

        asyncio.run(scenario())


class TestCancel:
    """``POST /v1/runs/{id}/cancel``."""

    async def test_a_queued_run_is_cancelled_at_once(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """``cancelled``, finished now, audited ``run.cancel`` by the caller."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await active_cloud(facade, ada, wid))
        clock.advance(SECOND)
        cancelled = await facade.runs.cancel(ada, run.id)
        assert (cancelled.state, cancelled.finished_at) == (RunState.CANCELLED, clock.now())
        assert cancelled.cancel_requested is False
        assert await facade.runs.get(ada, run.id) == cancelled
        [event] = await audit_events(facade, ada, "run.cancel")
        assert (event.actor, event.outcome) == (ada.actor, Outcome.SUCCESS)
        assert (event.target_type, event.target_id) == ("run", str(run.id))
        assert event.changes == {"state": Change("queued", "cancelled")}

    async def test_a_running_run_is_asked_to_stop(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """It stays ``running`` with ``cancel_requested``; asking again changes nothing but
        is audited again."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        asked = await facade.runs.cancel(ada, run.id)
        clock.advance(SECOND)
        assert (asked.state, asked.cancel_requested, asked.finished_at) == (
            RunState.RUNNING,
            True,
            None,
        )
        assert await facade.runs.cancel(ada, run.id) == asked
        assert await facade.runs.get(ada, run.id) == asked
        again, first = await audit_events(facade, ada, "run.cancel")
        assert first.changes == {"cancel_requested": Change(False, True)}
        assert not again.changes
        assert (again.target_id, again.outcome) == (str(run.id), Outcome.SUCCESS)

    async def test_a_finished_run_is_invalid_state(self, facade: Strongroom) -> None:
        """A cancelled run cannot be cancelled again; nothing more is audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await active_cloud(facade, ada, wid))
        cancelled = await facade.runs.cancel(ada, run.id)
        with pytest.raises(InvalidStateError, match="cancelled"):
            await facade.runs.cancel(ada, run.id)
        assert await facade.runs.get(ada, run.id) == cancelled
        assert len(await audit_events(facade, ada, "run.cancel")) == 1

    async def test_trigger_or_write_is_needed(self, facade: Strongroom) -> None:
        """``backups:trigger`` or ``backups:write``; a viewer is refused, audited denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        manual = await active_manual(facade, ada)
        for permission in ("backups:trigger", "backups:write"):
            key = await api_key(facade, ada, [permission])
            run = await facade.runs.start(ada, manual)
            assert (await facade.runs.cancel(key, run.id)).cancel_requested
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        run = await facade.runs.start(ada, manual)
        with pytest.raises(MissingPermissionError):
            await facade.runs.cancel(vera, run.id)
        assert not (await facade.runs.get(ada, run.id)).cancel_requested
        denied = [e for e in await audit_events(facade, ada, "run.cancel") if e.actor == vera.actor]
        assert [e.outcome for e in denied] == [Outcome.DENIED]

    async def test_another_workspaces_run_is_not_found(self, facade: Strongroom) -> None:
        """404 like a run that does not exist, and the run is untouched."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com")
        run = await facade.runs.start(ada, await active_manual(facade, ada))
        for run_id in (run.id, uuid4()):
            with pytest.raises(NotFoundError, match="run"):
                await facade.runs.cancel(bob, run_id)
        assert await facade.runs.get(ada, run.id) == run

    async def test_billing_never_refuses_a_cancel(self, facade: Strongroom) -> None:
        """A blocked workspace can still stop its runs."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        run = await facade.runs.trigger(ada, await active_cloud(facade, ada, wid))
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        assert (await facade.runs.cancel(ada, run.id)).state is RunState.CANCELLED
