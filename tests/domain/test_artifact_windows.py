"""The artifact rules as properties of pure functions: the quota's arithmetic
(``ensure_room``), the lock and expiry windows counted from the confirmation, and contract
10's delete precedence (deleted, then locked, then last of its backup).

Moved down from the HTTP tests ``test_artifacts.py::TestGates`` and ``TestDelete``, which
checked these through the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies import retention_policies
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.errors import (
    ArtifactLockedError,
    ConflictError,
    LastArtifactError,
    QuotaExceededError,
)
from strongroom.domain.quotas import ensure_room

START = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)
SECONDS = st.integers(min_value=0, max_value=200 * 86_400)


def pending(size: int = 3) -> Artifact:
    """A pending artifact announced at ``START``."""
    return Artifact(
        uuid4(),
        uuid4(),
        uuid4(),
        uuid4(),
        "db.dump",
        size,
        "ab" * 32,
        ArtifactState.PENDING,
        ArtifactStorage.SERVICE,
        "objects/db.dump",
        START,
    )


class TestQuotaArithmetic:
    """``ensure_room``: a limit of 0 is no limit; otherwise usage plus what is added may
    reach the limit but not pass it."""

    @given(
        limit=st.integers(min_value=0, max_value=10**12),
        usage=st.integers(min_value=0, max_value=10**12),
        adding=st.integers(min_value=0, max_value=10**12),
    )
    def test_refused_exactly_when_the_sum_passes_a_set_limit(
        self, limit: int, usage: int, adding: int
    ) -> None:
        if limit and usage + adding > limit:
            with pytest.raises(QuotaExceededError) as refused:
                ensure_room("storage_bytes", limit, usage, adding)
            assert refused.value.code == "quota_exceeded"
            assert (refused.value.resource, refused.value.limit) == ("storage_bytes", limit)
            assert f"storage_bytes is limited to {limit}" in str(refused.value)
        else:
            ensure_room("storage_bytes", limit, usage, adding)

    def test_ten_bytes_six_stored_four_fit_then_none(self) -> None:
        """The HTTP example: a limit of 10 bytes, 6 stored, 4 more fit, then 1 is refused."""
        ensure_room("storage_bytes", 10, 6, 4)
        with pytest.raises(QuotaExceededError, match="storage_bytes"):
            ensure_room("storage_bytes", 10, 10, 1)

    def test_one_more_of_a_counted_resource(self) -> None:
        """By default one more: with a limit of 2, the third is refused naming the limit."""
        ensure_room("backups_per_workspace", 2, 1)
        with pytest.raises(QuotaExceededError, match="backups_per_workspace is limited to 2"):
            ensure_room("backups_per_workspace", 2, 2)


class TestLockAndExpiry:
    """A confirmed artifact is locked for ``lock_for`` and expires after ``expire_after``,
    both counted from its confirmation."""

    @given(policy=retention_policies(), after=SECONDS)
    def test_windows_are_counted_from_the_confirmation(
        self, policy: RetentionPolicy, after: int
    ) -> None:
        confirmed = pending().confirmed(policy, START)
        lock_end = START + timedelta(seconds=policy.lock_for.seconds)
        expiry = START + timedelta(seconds=policy.expire_after.seconds)
        assert (confirmed.state, confirmed.locked_until, confirmed.expires_at) == (
            ArtifactState.AVAILABLE,
            lock_end,
            expiry,
        )
        moment = START + timedelta(seconds=after)
        assert confirmed.is_locked(moment) is (moment < lock_end)
        assert confirmed.is_expired(moment) is (moment >= expiry)

    @given(policy=retention_policies(), after=SECONDS)
    def test_a_pending_or_deleted_artifact_is_neither_locked_nor_expired(
        self, policy: RetentionPolicy, after: int
    ) -> None:
        moment = START + timedelta(seconds=after)
        gone = pending().confirmed(policy, START).deleted()
        for artifact in (pending(), gone):
            assert not artifact.is_locked(moment)
            assert not artifact.is_expired(moment)


class TestDeletePrecedence:
    """Contract 10: deleted (``conflict``), then locked (``artifact_locked``), then the
    last available artifact of its backup (``last_artifact``)."""

    @given(
        policy=retention_policies(),
        after=SECONDS,
        others=st.integers(min_value=0, max_value=5),
        gone=st.booleans(),
    )
    def test_the_first_rule_that_applies_refuses(
        self, policy: RetentionPolicy, after: int, others: int, gone: bool
    ) -> None:
        confirmed = pending().confirmed(policy, START)
        artifact = confirmed.deleted() if gone else confirmed
        moment = START + timedelta(seconds=after)
        available = others + (0 if gone else 1)
        expected: type[ConflictError] | None
        if gone:
            expected = ConflictError
        elif confirmed.is_locked(moment):
            expected = ArtifactLockedError
        elif available <= 1:
            expected = LastArtifactError
        else:
            expected = None
        if expected is None:
            artifact.ensure_deletable(moment, available)
            return
        with pytest.raises(ConflictError) as refused:
            artifact.ensure_deletable(moment, available)
        assert type(refused.value) is expected

    def test_locked_then_last_then_deletable_then_conflict(self) -> None:
        """The HTTP walk: locked for a day; two days on, the backup's last; with a second
        one, deletable; once deleted, ``conflict``."""
        policy = RetentionPolicy(Duration.parse("P30D"), Duration.parse("P1D"))
        first = pending().confirmed(policy, START)
        with pytest.raises(ArtifactLockedError) as locked:
            first.ensure_deletable(START, 1)
        assert locked.value.code == "artifact_locked"
        two_days = START + timedelta(days=2)
        with pytest.raises(LastArtifactError) as last:
            first.ensure_deletable(two_days, 1)
        assert last.value.code == "last_artifact"
        first.ensure_deletable(two_days, 2)
        with pytest.raises(ConflictError) as again:
            first.deleted().ensure_deletable(two_days, 1)
        assert again.value.code == "conflict"

    def test_a_pending_artifact_is_never_the_last(self) -> None:
        """Only an available artifact is kept as its backup's last."""
        pending().ensure_deletable(START, 0)
