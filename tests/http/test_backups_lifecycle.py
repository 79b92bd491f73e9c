"""HTTP tests of a backup's life after creation: schedules and ``next_run_at``, pause
and resume, delete, and the billing gates on every write."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from strongroom.domain.billing import BillingState
from support.backups_http import (
    CLOUD_COMPLETE,
    NOT_JSON,
    RECORD_FIELDS,
    RETENTION,
    SCHEDULE,
    FixedClock,
    Tenant,
)
from support.checks import assert_error


class TestSchedule:
    """``next_run_at`` is set only while a backup is active, scheduled and not paused."""

    @pytest.mark.parametrize(
        "cron",
        [
            "0 0 L * *",
            "0 0 ? * *",
            "0 0 15W * *",
            "0 0 * * 1#2",
            "*/60 * * * *",
            "*/500 * * * *",
            "0 0 1-31/40 * *",
            "5/15 * * * *",
            "0 0 * * 5-1",
        ],
    )
    def test_cron_beyond_the_contracts_grammar_is_400(self, timed: Tenant, cron: str) -> None:
        """Contract 13: ``L``, ``?``, ``W``, ``#``, steps beyond the field's range (and the
        other non-standard forms croniter takes) are 400 ``invalid_request``; nothing is
        stored."""
        record = timed.backup("Nightly", "cloud")
        response = timed.patch(record["id"], {"schedule": {"cron": cron, "timezone": "UTC"}})
        assert_error(response, 400, "invalid_request", "schedule.cron")
        assert timed.read(record["id"]) == record

    def test_cron_names_and_steps_within_range_are_accepted(self, timed: Tenant) -> None:
        """English month and weekday names, lists, ranges and steps are kept as sent."""
        record = timed.backup("Nightly", "cloud")
        schedule = {"cron": "*/30 9-17 * jan-jun/2 MON-FRI", "timezone": "UTC"}
        assert timed.patched(record["id"], {"schedule": schedule})["schedule"] == schedule

    def test_a_draft_has_no_next_run(self, timed: Tenant) -> None:
        """A schedule on a draft is stored but nothing is planned."""
        record = timed.backup("Nightly", "cloud")
        patched = timed.patched(record["id"], {"schedule": SCHEDULE})
        assert patched["schedule"] == SCHEDULE
        assert patched["state"] == "draft"
        assert patched["next_run_at"] is None

    def test_activation_plans_the_next_run(self, timed: Tenant) -> None:
        """03:00 in Paris (UTC+1 in January) after 12:00 UTC is 02:00 UTC the next day."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {"schedule": SCHEDULE})
        active = timed.patched(record["id"], CLOUD_COMPLETE)
        assert active["state"] == "active"
        assert active["next_run_at"] == "2030-01-03T02:00:00.000Z"
        assert timed.read(record["id"])["next_run_at"] == "2030-01-03T02:00:00.000Z"

    def test_a_schedule_in_the_activating_patch(self, timed: Tenant) -> None:
        """Schedule and completion in one PATCH give a next run at once."""
        record = timed.backup("Nightly", "cloud")
        body = {**CLOUD_COMPLETE, "schedule": {"cron": "30 * * * *", "timezone": "UTC"}}
        assert timed.patched(record["id"], body)["next_run_at"] == "2030-01-02T12:30:00.000Z"

    def test_clearing_the_schedule_clears_the_next_run(self, timed: Tenant) -> None:
        """``schedule: null`` removes the schedule and the planned run."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {**CLOUD_COMPLETE, "schedule": SCHEDULE})
        cleared = timed.patched(record["id"], {"schedule": None})
        assert cleared["schedule"] is None
        assert cleared["next_run_at"] is None
        assert cleared["state"] == "active"

    def test_pause_stops_planning_and_resume_plans_again(
        self, timed: Tenant, clock: FixedClock
    ) -> None:
        """Paused: no next run, state kept; resumed later: the next run after that moment."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {**CLOUD_COMPLETE, "schedule": SCHEDULE})
        clock.moment += timedelta(hours=1)
        paused = timed.action(record["id"], "pause")
        assert paused.status_code == 200
        assert paused.json()["paused"] is True
        assert paused.json()["state"] == "active"
        assert paused.json()["next_run_at"] is None
        assert paused.json()["updated_at"] == "2030-01-02T13:00:00.000Z"
        clock.moment = datetime(2030, 1, 3, 5, 0, tzinfo=UTC)
        resumed = timed.action(record["id"], "resume").json()
        assert resumed["paused"] is False
        assert resumed["next_run_at"] == "2030-01-04T02:00:00.000Z"
        assert timed.read(record["id"]) == resumed

    def test_a_schedule_set_while_paused_plans_nothing(self, timed: Tenant) -> None:
        """A paused active backup keeps its schedule but no next run."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], CLOUD_COMPLETE)
        timed.action(record["id"], "pause")
        patched = timed.patched(record["id"], {"schedule": SCHEDULE})
        assert patched["schedule"] == SCHEDULE
        assert patched["next_run_at"] is None


class TestPauseResume:
    """``POST /v1/backups/{bid}/pause`` and ``/resume``."""

    def test_pause_on_a_draft_is_allowed(self, ada: Tenant) -> None:
        """A draft can be paused; it stays a draft."""
        record = ada.backup()
        response = ada.action(record["id"], "pause")
        assert response.status_code == 200
        assert set(response.json()) == RECORD_FIELDS
        assert response.json()["paused"] is True
        assert response.json()["state"] == "draft"
        assert ada.read(record["id"])["paused"] is True

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    def test_is_idempotent(self, ada: Tenant, verb: str) -> None:
        """Repeating the action returns the same backup and keeps its state."""
        record = ada.backup()
        ada.patched(record["id"], {"retention": RETENTION})
        first = ada.action(record["id"], verb)
        second = ada.action(record["id"], verb)
        assert first.status_code == second.status_code == 200
        assert first.json() == second.json()
        assert first.json()["paused"] is (verb == "pause")
        assert first.json()["state"] == "active"

    def test_resume_of_an_active_backup_is_not_an_error(self, ada: Tenant) -> None:
        """Resuming a backup that is not paused is 200 with it unchanged."""
        record = ada.backup()
        active = ada.patched(record["id"], {"retention": RETENTION})
        response = ada.action(record["id"], "resume")
        assert response.status_code == 200
        assert response.json() == active

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    @pytest.mark.parametrize(
        ("content", "content_type"),
        [
            (None, None),
            (b"", "text/plain"),
            (b"{}", "application/json"),
            (b"{}", "application/json; charset=utf-8"),
        ],
    )
    def test_the_body_is_optional(
        self, ada: Tenant, verb: str, content: bytes | None, content_type: str | None
    ) -> None:
        """No body (whatever the Content-Type), or ``{}``, is accepted."""
        record = ada.backup()
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = ada.action(record["id"], verb, content=content, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["paused"] is (verb == "pause")

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    @pytest.mark.parametrize(
        ("content", "content_type", "fragment"),
        [
            (b'{"force": true}', "application/json", "unknown field: force"),
            (b"{}", "text/plain", "Content-Type"),
            (b"{}", None, "Content-Type"),
            (NOT_JSON, "application/json", "JSON"),
            (b"[]", "application/json", "object"),
        ],
    )
    def test_refuses_a_bad_body(
        self,
        ada: Tenant,
        verb: str,
        content: bytes,
        content_type: str | None,
        fragment: str,
    ) -> None:
        """A body that is present must be ``{}`` as JSON; the backup is untouched."""
        record = ada.backup()
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = ada.action(record["id"], verb, content=content, headers=headers)
        assert_error(response, 400, "invalid_request", fragment)
        assert ada.read(record["id"]) == record

    @pytest.mark.parametrize("verb", ["pause", "resume"])
    def test_unknown_backup_is_not_found(self, ada: Tenant, verb: str) -> None:
        """Pausing or resuming an id that names no backup is 404."""
        assert_error(ada.action(str(uuid4()), verb), 404, "not_found")

    def test_actions_are_audited(self, ada: Tenant) -> None:
        """Pause and resume write ``backup.pause`` and ``backup.resume`` events."""
        record = ada.backup()
        ada.action(record["id"], "pause")
        ada.action(record["id"], "resume")
        for action, after in (("backup.pause", True), ("backup.resume", False)):
            events = ada.audit(action=action).json()["data"]
            assert len(events) == 1
            assert events[0]["target"] == {"type": "backup", "id": record["id"]}
            assert events[0]["changes"]["paused"] == {"from": not after, "to": after}


class TestDelete:
    """``DELETE /v1/backups/{bid}``."""

    def test_deletes_then_the_backup_is_gone(self, ada: Tenant) -> None:
        """204 with no body; afterwards read, delete and PATCH are 404 and the list is empty."""
        record = ada.backup()
        response = ada.delete(record["id"])
        assert response.status_code == 204
        assert response.content == b""
        assert_error(ada.get(record["id"]), 404, "not_found")
        assert_error(ada.delete(record["id"]), 404, "not_found")
        assert_error(ada.patch(record["id"], {"name": "x"}), 404, "not_found")
        assert ada.list().json()["data"] == []

    def test_is_audited(self, ada: Tenant) -> None:
        """A deletion writes a ``backup.delete`` event naming the backup."""
        record = ada.backup()
        ada.delete(record["id"])
        events = ada.audit(action="backup.delete").json()["data"]
        assert len(events) == 1
        assert events[0]["target"] == {"type": "backup", "id": record["id"]}
        assert events[0]["outcome"] == "success"


class TestBilling:
    """Billing gates configuration writes in ``blocked`` only; reads are never refused."""

    @pytest.mark.parametrize(
        "state",
        [BillingState.TRIAL, BillingState.ACTIVE, BillingState.WARNED, BillingState.STOPPED],
    )
    def test_configuration_changes_are_allowed(self, ada: Tenant, state: BillingState) -> None:
        """Create, PATCH, pause, resume and delete succeed outside ``blocked``."""
        ada.set_billing(state)
        record = ada.backup()
        assert ada.patched(record["id"], {"retention": RETENTION})["state"] == "active"
        assert ada.action(record["id"], "pause").json()["paused"] is True
        assert ada.action(record["id"], "resume").json()["paused"] is False
        assert ada.delete(record["id"]).status_code == 204

    def test_blocked_refuses_every_write_naming_the_state(self, ada: Tenant) -> None:
        """Blocked: every write is 409 ``billing_restricted`` naming the state; nothing changes."""
        record = ada.backup()
        ada.set_billing(BillingState.BLOCKED)
        refused = [
            ada.create({"name": "Weekly", "kind": "manual"}),
            ada.patch(record["id"], {"retention": RETENTION}),
            ada.patch(record["id"], {"name": "Renamed"}),
            ada.action(record["id"], "pause"),
            ada.action(record["id"], "resume"),
            ada.delete(record["id"]),
        ]
        for response in refused:
            assert_error(response, 409, "billing_restricted", "workspace billing state is blocked")
        assert ada.read(record["id"]) == record
        assert [b["id"] for b in ada.list().json()["data"]] == [record["id"]]

    def test_blocked_still_answers_404_before_billing(self, ada: Tenant) -> None:
        """An unknown backup is 404 even in a blocked workspace."""
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.patch(str(uuid4()), {"name": "x"}), 404, "not_found")
        assert_error(ada.delete(str(uuid4())), 404, "not_found")

    def test_writes_resume_when_unblocked(self, ada: Tenant) -> None:
        """Leaving ``blocked`` allows writes again on the next request."""
        ada.set_billing(BillingState.BLOCKED)
        assert_error(ada.create({"name": "n", "kind": "manual"}), 409, "billing_restricted")
        ada.set_billing(BillingState.ACTIVE)
        assert ada.create({"name": "n", "kind": "manual"}).status_code == 201
