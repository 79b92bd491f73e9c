"""Times inside messages are written as the API writes them in bodies: RFC 3339 in UTC
with ``Z`` and milliseconds, so a client can compare a message's time with a field's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.errors import ArtifactLockedError
from strongroom.domain.timestamps import format_timestamp, parse_timestamp

INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(9000, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)


class TestFormatTimestamp:
    """``format_timestamp``: the one written form."""

    def test_the_api_form(self) -> None:
        """UTC, ``Z``, exactly three decimals."""
        moment = datetime(2026, 3, 1, 14, 0, 0, 250_999, tzinfo=timezone(timedelta(hours=2)))
        assert format_timestamp(moment) == "2026-03-01T12:00:00.250Z"

    @given(INSTANTS)
    def test_parsing_the_form_gives_the_instant_to_the_millisecond(self, moment: datetime) -> None:
        """What is written parses back (milliseconds kept, the rest cut)."""
        parsed = parse_timestamp(format_timestamp(moment), "at")
        assert parsed == moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def test_a_locked_artifacts_refusal_writes_its_lock_end_in_the_api_form() -> None:
    """``artifact_locked`` says until when, as ``locked_until`` appears in the artifact."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    artifact = Artifact(
        id=uuid4(),
        workspace_id=uuid4(),
        backup_id=uuid4(),
        run_id=uuid4(),
        name="db.dump",
        size=1,
        sha256="ab" * 32,
        state=ArtifactState.AVAILABLE,
        storage=ArtifactStorage.SERVICE,
        object_key="ns/key",
        created_at=now,
        locked_until=now + timedelta(days=1, microseconds=5),
    )
    with pytest.raises(ArtifactLockedError) as refused:
        artifact.ensure_deletable(now, available_in_backup=2)
    assert (
        refused.value.message == "artifact is inside its lock window until 2026-01-02T00:00:00.000Z"
    )
