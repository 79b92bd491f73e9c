"""The SDK reads the server's own models tolerantly: a newer server (more fields, new
states, a new source type) does not break an older client, and what the client builds
is sent as the server reads it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from strongroom.client import (
    Backup,
    Me,
    PostgresSource,
    ProgressReport,
    Retention,
    Run,
    S3Source,
    Schedule,
)
from strongroom.client.converter import converter, unstructure
from strongroom.domain.backups import BackupState, UnsupportedSource

ID = "6f1c2a9e-0000-4000-8000-000000000001"
WHEN = "2026-01-01T00:00:00.000Z"


def backup(**changes: Any) -> dict[str, Any]:
    """A backup as the API writes it, with ``changes``."""
    return {
        "id": ID,
        "workspace_id": ID,
        "name": "nightly",
        "kind": "cloud",
        "state": "active",
        "paused": False,
        "source": {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "bucket-b"},
        "has_credentials": True,
        "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
        "worker_id": None,
        "retention": {"expire_after": "P30D", "lock_for": "P7D"},
        "destination": {"type": "service"},
        "next_run_at": WHEN,
        "created_at": WHEN,
        "updated_at": WHEN,
        **changes,
    }


def test_an_answer_reads_into_the_views_a_client_also_builds() -> None:
    """Nested values are the classes a client sends: equal to ones it builds."""
    read = converter.structure(backup(), Backup)
    assert read.source == S3Source("https://s3.example.com", "bucket-b")
    assert read.schedule == Schedule("0 3 * * *", "Europe/Paris")
    assert read.retention == Retention("P30D", "P7D")
    assert read.state == "active"
    assert read.state is BackupState.ACTIVE
    assert read.id == UUID(ID)


def test_a_backup_from_a_server_before_snapshots_reads_as_an_archive_backup() -> None:
    """No ``format`` nor ``encryption`` in the answer: read, and (once the model has
    them) an archive backup without encryption."""
    read = converter.structure(backup(), Backup)
    assert getattr(read, "format", "archive") == "archive"
    assert getattr(read, "encryption", None) is None
    sealed = converter.structure(backup(encryption={"recipients": ["age1x"]}), Backup)
    assert getattr(sealed, "format", "snapshot") == "snapshot"


def test_unknown_fields_states_and_source_types_are_kept_not_refused() -> None:
    """A field this client does not know is ignored, an enum value it does not know stays
    a string, a source type it does not know is an ``UnsupportedSource``."""
    newer = backup(state="archived", source={"type": "ftp", "host": "x"}, snapshots=[1])
    read = converter.structure(newer, Backup)
    assert read.state == "archived"
    assert read.source == UnsupportedSource("ftp")
    me = converter.structure(
        {"principal": {"type": "robot", "id": ID}, "workspace_id": None, "permissions": ["x:y"]},
        Me,
    )
    assert (me.principal.type, me.permissions, me.user) == ("robot", ["x:y"], None)


def test_what_the_client_builds_is_written_as_the_server_reads_it() -> None:
    """Durations canonical, optional progress fields left out, sources tagged."""
    assert unstructure(Retention("P1W")) == {"expire_after": "P7D", "lock_for": "PT0S"}
    assert unstructure(ProgressReport(5)) == {"bytes_done": 5}
    assert unstructure(PostgresSource("db", 5432, "app")) == {
        "host": "db",
        "port": 5432,
        "database": "app",
        "type": "postgres",
    }


def test_a_read_answer_writes_back_to_the_same_json() -> None:
    """Structured then presented again, a run is the JSON the server wrote."""
    run = {
        "id": ID,
        "backup_id": ID,
        "workspace_id": ID,
        "state": "running",
        "trigger": "api",
        "worker_id": None,
        "created_at": WHEN,
        "started_at": WHEN,
        "finished_at": None,
        "artifact_count": 0,
        "bytes": 0,
        "error": None,
        "attempt": 1,
        "lease_expires_at": WHEN,
        "cancel_requested": False,
        "progress": {"bytes_done": 1, "bytes_total": None, "message": None, "updated_at": WHEN},
    }
    read = converter.structure(run, Run)
    assert not read.finished
    assert unstructure(read) == run
