"""The restore aggregate and its rules (contract 11): states, erased credentials, which
artifacts the service restores into which targets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.backups import (
    Backup,
    BackupKind,
    PostgresSource,
    S3Source,
    UnsupportedSource,
)
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.errors import ConflictError, InvalidStateError, ValidationFailedError
from strongroom.domain.restores import (
    MAX_RESTORE_ERROR,
    Restore,
    RestoreState,
    check_restorable,
    check_restore_kind,
    check_target_endpoint,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
BUCKET = S3Source(endpoint="https://s3.example.com", bucket="b")
DATABASE = PostgresSource(host="db.example.com", port=5432, database="app")
S3_KEYS = {"access_key_id": "a", "secret_access_key": "s"}
PG_KEYS = {"username": "u", "password": "p"}


def queued() -> Restore:
    return Restore.queued(uuid4(), uuid4(), uuid4(), BUCKET, b"sealed", T0)


def backup(kind: BackupKind, source: object = None) -> Backup:
    made = Backup.draft(uuid4(), uuid4(), "b", kind, T0)
    return made if source is None else attrs.evolve(made, source=source)


class TestLifecycle:
    """queued -> running -> succeeded | failed, and nothing else."""

    def test_a_restore_runs_to_success_and_its_credentials_are_erased(self) -> None:
        """Start, then succeed: times set, credentials gone."""
        done = queued().start(T0 + timedelta(seconds=1)).succeed(T0 + timedelta(seconds=2))
        assert done.state is RestoreState.SUCCEEDED
        assert (done.started_at, done.finished_at) == (
            T0 + timedelta(seconds=1),
            T0 + timedelta(seconds=2),
        )
        assert done.sealed_credentials is None
        assert done.finished

    @given(st.text(max_size=3 * MAX_RESTORE_ERROR))
    def test_a_failure_keeps_a_bounded_reason_and_erases_credentials(self, error: str) -> None:
        """Any reason becomes 1 to MAX_RESTORE_ERROR characters; credentials gone."""
        failed = queued().start(T0).fail(error, T0)
        assert failed.state is RestoreState.FAILED
        assert failed.error is not None
        assert 1 <= len(failed.error) <= MAX_RESTORE_ERROR
        assert failed.sealed_credentials is None

    def test_only_a_queued_restore_starts_and_a_finished_one_stays(self) -> None:
        """Starting twice, succeeding a queued one, failing a finished one: invalid_state."""
        running = queued().start(T0)
        with pytest.raises(InvalidStateError):
            running.start(T0)
        with pytest.raises(InvalidStateError):
            queued().succeed(T0)
        for finished in (running.succeed(T0), running.fail("x", T0)):
            with pytest.raises(InvalidStateError):
                finished.fail("again", T0)


class TestRules:
    """Which artifacts, which targets."""

    @pytest.mark.parametrize("kind", [BackupKind.LOCAL, BackupKind.MANUAL])
    def test_local_and_manual_artifacts_are_the_clients(self, kind: BackupKind) -> None:
        """422 pointing at download-url."""
        with pytest.raises(ValidationFailedError, match="download-url"):
            check_restore_kind(backup(kind), BUCKET, S3_KEYS)

    @pytest.mark.parametrize(
        ("source", "target", "keys", "ok"),
        [
            (BUCKET, BUCKET, S3_KEYS, True),
            (DATABASE, DATABASE, PG_KEYS, True),
            (BUCKET, DATABASE, PG_KEYS, False),
            (DATABASE, BUCKET, S3_KEYS, False),
            (BUCKET, BUCKET, PG_KEYS, False),
            (DATABASE, DATABASE, S3_KEYS, False),
            (BUCKET, UnsupportedSource("ftp"), S3_KEYS, False),
            (UnsupportedSource("ftp"), BUCKET, S3_KEYS, False),
        ],
    )
    def test_the_target_matches_the_source_type_with_its_credentials(
        self, source: object, target: object, keys: dict[str, str], ok: bool
    ) -> None:
        """Same type and that type's credentials, or 422."""
        cloud = backup(BackupKind.CLOUD, source)
        if ok:
            assert check_restore_kind(cloud, target, keys) == target  # type: ignore[arg-type]
        else:
            with pytest.raises(ValidationFailedError):
                check_restore_kind(cloud, target, keys)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("target", "allowed"),
        [
            (S3Source(endpoint="http://127.0.0.1:9000", bucket="b"), False),
            (S3Source(endpoint="http://[::1]:9000", bucket="b"), False),
            (S3Source(endpoint="http://10.1.2.3", bucket="b"), True),
            (S3Source(endpoint="https://s3.example.com", bucket="b"), True),
            (PostgresSource(host="169.254.169.254", port=5432, database="d"), False),
            (PostgresSource(host="::1", port=5432, database="d"), False),
            (PostgresSource(host="192.168.1.5", port=5432, database="d"), True),
            (PostgresSource(host="db.internal", port=5432, database="d"), True),
        ],
    )
    def test_a_literal_address_outside_the_policy_is_refused(
        self, target: S3Source | PostgresSource, allowed: bool
    ) -> None:
        """The default policy: public and private ranges; loopback and link-local not."""
        policy = EndpointPolicy()
        if allowed:
            check_target_endpoint(target, policy)
        else:
            with pytest.raises(ValidationFailedError, match="target"):
                check_target_endpoint(target, policy)

    @pytest.mark.parametrize(
        ("state", "error"),
        [
            (ArtifactState.AVAILABLE, None),
            (ArtifactState.PENDING, InvalidStateError),
            (ArtifactState.DELETED, ConflictError),
        ],
    )
    def test_only_an_available_artifact_is_restored(
        self, state: ArtifactState, error: type[Exception] | None
    ) -> None:
        """Pending: invalid_state; deleted: conflict."""
        artifact = Artifact(
            uuid4(),
            uuid4(),
            uuid4(),
            uuid4(),
            "a",
            1,
            "0" * 64,
            state,
            ArtifactStorage.SERVICE,
            "k",
            T0,
        )
        if error is None:
            check_restorable(artifact)
        else:
            with pytest.raises(error):
                check_restorable(artifact)
