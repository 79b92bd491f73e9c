"""What an aggregate's change records for the audit trail (``domain/events.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from strongroom.domain.audit import Change
from strongroom.domain.events import Recorded, changed, created, removed
from strongroom.domain.machines import Worker
from strongroom.domain.runs import Run, RunState, RunTrigger

NOW = datetime(2030, 1, 2, tzinfo=UTC)


def _run() -> Run:
    return Run(uuid4(), uuid4(), uuid4(), RunState.QUEUED, RunTrigger.API, NOW)


def test_a_change_records_only_the_fields_that_differ() -> None:
    """Claiming a run records its state, nothing it kept."""
    queued = _run()
    running = queued.claim(uuid4(), NOW)
    assert changed("run.claim", queued, running) == Recorded(
        "run.claim", queued.id, {"state": Change("queued", "running")}
    )


def test_a_creation_records_every_field_with_a_value_and_its_extras() -> None:
    """From nothing: every field of the view that has a value (``False`` is one), and
    the extras."""
    run = _run()
    made = created("run.schedule", run, slot="2030-01-02T00:00:00+00:00")
    assert made.target_id == run.id
    assert made.changes is not None
    assert sorted(made.changes) == [
        "artifact_count",
        "backup_id",
        "bytes",
        "cancel_requested",
        "slot",
        "state",
        "trigger",
    ]
    assert made.changes["slot"] == Change(None, "2030-01-02T00:00:00+00:00")


def test_a_removal_records_every_field_to_nothing() -> None:
    """A deleted worker: its name, to nothing; never its credential."""
    rack = Worker(uuid4(), uuid4(), "rack", "hash", NOW)
    assert removed("worker.delete", rack).changes == {"name": Change("rack", None)}
    assert rack.recorded_rotation() == Recorded("worker.rotate", rack.id)


def test_the_target_type_is_the_actions_resource_unless_named() -> None:
    """``run.skip`` names the backup whose slot it skipped."""
    assert Recorded("run.cancel", uuid4()).target == "run"
    assert Recorded("run.skip", uuid4(), target_type="backup").target == "backup"
