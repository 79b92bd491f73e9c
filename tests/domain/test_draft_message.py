"""A draft backup refuses runs with a message that names what its configuration lacks."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import attrs
import pytest

from strongroom.domain.backups import Backup, BackupKind, RetentionPolicy, S3Source
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidStateError

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RETENTION = RetentionPolicy(Duration.parse("P30D"), Duration.parse("P1D"))
S3 = S3Source("https://s3.example.com", "bucket")


def draft(kind: BackupKind, **fields: object) -> Backup:
    return attrs.evolve(Backup.draft(UUID(int=1), UUID(int=2), "nightly", kind, NOW), **fields)


@pytest.mark.parametrize(
    ("backup", "missing"),
    [
        (draft(BackupKind.MANUAL), "retention"),
        (draft(BackupKind.CLOUD), "retention, source, credentials"),
        (
            draft(
                BackupKind.CLOUD,
                retention=RETENTION,
                source=S3Source("https://s3.example.com", "b"),
            ),
            "credentials",
        ),
        (draft(BackupKind.LOCAL), "retention, worker_id"),
        (draft(BackupKind.LOCAL, retention=RETENTION), "worker_id"),
    ],
)
def test_the_refusal_names_what_is_missing(backup: Backup, missing: str) -> None:
    """409 ``invalid_state`` as before; the message lists the missing fields by their API
    names, in the order a PATCH would set them."""
    with pytest.raises(InvalidStateError) as refused:
        backup.ensure_runnable()
    assert refused.value.code == "invalid_state"
    assert refused.value.message.endswith(f"missing: {missing}")
    assert refused.value.message.startswith("backup is a draft")


def test_a_complete_configuration_misses_nothing() -> None:
    """Complete is exactly "nothing missing"."""
    for backup in (
        draft(BackupKind.MANUAL, retention=RETENTION),
        draft(BackupKind.LOCAL, retention=RETENTION, worker_id=UUID(int=3)),
    ):
        assert backup.missing_configuration() == []
        assert backup.is_complete()
