"""The parameters of a session's create (``backup_create_in_session``) are the values the
general writes give the same columns: the draft's as ``backup_params``, the event's as
``audit_params``; the columns a draft leaves NULL are written as NULL by the text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from psycopg.types.json import Json

from strategies import backup_kinds, schedules, valid_names
from strongroom.adapters.sql import rows
from strongroom.adapters.sql.postgres import PostgresCodec
from strongroom.adapters.sql.repositories import _create_lists, _session_create_params
from strongroom.adapters.sql.rows import Codec
from strongroom.adapters.sql.sqlite import SqliteCodec
from strongroom.domain.audit import AuditEvent, Outcome, diff
from strongroom.domain.backups import Backup, BackupKind
from strongroom.domain.principals import Actor, PrincipalType
from strongroom.ports.driving.backups import ADMIT_BACKUP, CREATE_BACKUP, audit_snapshot
from strongroom.ports.driving.recording import SESSION_PERSON

CODECS: list[Codec] = [PostgresCodec(), SqliteCodec()]
MOMENTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
LISTS = _create_lists(ADMIT_BACKUP, tuple(CREATE_BACKUP.permissions))


def plain(value: Any) -> Any:
    """A parameter as compared: the object a psycopg ``Json`` wraps."""
    return value.obj if isinstance(value, Json) else value


def session_create(draft: Backup, request_id: str | None, now: datetime) -> AuditEvent:
    """The event ``Backups`` records with a session's create."""
    return AuditEvent(
        id=uuid4(),
        workspace_id=draft.workspace_id,
        occurred_at=now + timedelta(microseconds=1),
        actor=Actor(PrincipalType.USER, SESSION_PERSON),
        action="backup.create",
        target_type="backup",
        target_id=str(draft.id),
        request_id=request_id,
        outcome=Outcome.SUCCESS,
        changes=diff({}, audit_snapshot(draft)),
    )


@given(
    name=valid_names(),
    kind=backup_kinds(),
    now=MOMENTS,
    request_id=st.none() | st.text(max_size=40),
    codec=st.sampled_from(CODECS),
)
def test_the_values_are_those_of_the_general_writes(
    name: str, kind: BackupKind, now: datetime, request_id: str | None, codec: Codec
) -> None:
    draft = Backup.draft(uuid4(), uuid4(), name, kind, now)
    event = session_create(draft, request_id, now)
    params = _session_create_params(draft, event, "hash", now, LISTS, ADMIT_BACKUP, codec)

    columns = rows.backup_params(draft, codec)
    audit = rows.audit_params(event, codec)
    left_null = {column for column, value in columns.items() if value is None}
    expected = {
        **{column: value for column, value in columns.items() if value is not None},
        **{column: audit[column] for column in rows_of_event()},
        "event_id": audit["id"],
        "token_hash": "hash",
        "now": codec.timestamp(now),
        "billing_states": LISTS[0],
        "granting_builtin": LISTS[1],
        "builtin": LISTS[2],
        "permissions": LISTS[3],
        "default_limit": ADMIT_BACKUP.default_limit,
    }
    assert {key: plain(value) for key, value in params.items()} == {
        key: plain(value) for key, value in expected.items()
    }
    assert left_null == NULL_IN_TEXT


def rows_of_event() -> tuple[str, ...]:
    """The event's columns the statement takes as they are (its id is ``event_id``; its
    workspace is the backup's; its actor is the session's person)."""
    return (
        "occurred_at",
        "actor_type",
        "action",
        "target_type",
        "target_id",
        "request_id",
        "outcome",
        "changes",
    )


NULL_IN_TEXT = {
    "source",
    "sealed_credentials",
    "schedule_cron",
    "schedule_timezone",
    "worker_id",
    "retention_expire_after_seconds",
    "retention_lock_for_seconds",
    "sealed_destination_credentials",
    "next_run_at",
}


@given(schedule=schedules())
def test_a_backup_that_is_not_a_bare_draft_is_refused(schedule: Any) -> None:
    """Its configured columns would be lost: the create refuses it rather than write NULL."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    draft = Backup.draft(UUID(int=1), UUID(int=2), "db", BackupKind.CLOUD, now)
    configured = attrs.evolve(draft, schedule=schedule)
    event = session_create(configured, None, now)
    with pytest.raises(ValueError, match="schedule"):
        _session_create_params(configured, event, "h", now, LISTS, ADMIT_BACKUP, CODECS[0])
