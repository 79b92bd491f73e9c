"""HTTP tests of a backup's life after creation: the schedule's wire form and
``next_run_at`` as a timestamp, pause and resume bodies, delete's answer, and the billing
gate's status on every write route. When ``next_run_at`` is planned, pause and resume
themselves, their audit and the gate's lifting: ``tests/usecases/test_backup_lifecycle.py``
and ``tests/usecases/test_backups.py``."""

from __future__ import annotations

from uuid import uuid4

import pytest

from strongroom.domain.billing import BillingState
from support.backups_http import (
    CLOUD_COMPLETE,
    NOT_JSON,
    RECORD_FIELDS,
    RETENTION,
    SCHEDULE,
    Tenant,
)
from support.checks import assert_error


class TestSchedule:
    """The schedule as sent and ``next_run_at`` in the API's timestamp form (when it is
    planned: ``tests/usecases/test_backup_lifecycle.py::TestSchedule``)."""

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

    def test_activation_plans_the_next_run(self, timed: Tenant) -> None:
        """``next_run_at`` in the API's form, in the answer and on a later read: 03:00 in
        Paris after 12:00 UTC is 02:00 UTC the next day."""
        record = timed.backup("Nightly", "cloud")
        timed.patched(record["id"], {"schedule": SCHEDULE})
        active = timed.patched(record["id"], CLOUD_COMPLETE)
        assert active["state"] == "active"
        assert active["next_run_at"] == "2030-01-03T02:00:00.000Z"
        assert timed.read(record["id"])["next_run_at"] == "2030-01-03T02:00:00.000Z"


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


class TestBilling:
    """Billing gates configuration writes in ``blocked`` only; reads are never refused."""

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
