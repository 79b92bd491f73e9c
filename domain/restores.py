"""Restores (contract 11): the service puts a cloud artifact back into a target.

A restore is asked for with a target (the same shape as a cloud source: an S3 bucket or a
PostgreSQL database) and the target's credentials; the service runs it in the background.
It goes ``queued`` -> ``running`` -> ``succeeded`` | ``failed``. The target never holds a
secret; the credentials are kept sealed only until the restore finishes.

Which artifacts the service restores: those of a cloud backup whose source is ``s3`` or
``postgres``, into a target of that same type. Local and manual artifacts are restored by
their client (``download-url``); the service refuses them as a kind rule (422).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.audit import JsonValue
from strongroom.domain.backups import (
    CREDENTIAL_FIELDS,
    Backup,
    BackupKind,
    PostgresSource,
    S3Source,
    Source,
)
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.errors import ConflictError, InvalidStateError, ValidationFailedError

# A restore's error is at most this long (as a run's).
MAX_RESTORE_ERROR = 2000

RestoreTarget = S3Source | PostgresSource

# A restore whose runner stopped renewing its lease (killed) is queued again up to this
# many attempts in all, then failed as interrupted.
MAX_RESTORE_ATTEMPTS = 3
# How long a runner holds a restore without renewing; renewed every quarter of it.
RESTORE_LEASE = timedelta(seconds=60)
INTERRUPTED = (
    "interrupted: the service stopped during the restore; the target may hold part of the artifact"
)


class RestoreState(StrEnum):
    """Where a restore stands."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


FINISHED_RESTORE_STATES = frozenset({RestoreState.SUCCEEDED, RestoreState.FAILED})


def _clip(error: str) -> str:
    """An error message of 1 to ``MAX_RESTORE_ERROR`` characters."""
    cleaned = error.strip() or "restore failed"
    if len(cleaned) <= MAX_RESTORE_ERROR:
        return cleaned
    return cleaned[: MAX_RESTORE_ERROR - 1] + "…"


@attrs.frozen
class Restore:
    """One restore of an artifact into a target, from its request to its end."""

    id: UUID
    workspace_id: UUID
    artifact_id: UUID
    target: RestoreTarget
    state: RestoreState
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    # The target's credentials, sealed; erased (None) once the restore finishes.
    sealed_credentials: bytes | None = attrs.field(default=None, repr=False)
    # 1-based; a restore whose lease ran out is queued again with ``attempt + 1``.
    attempt: int = 1
    # While ``running``: until when its runner holds it (renewed as it streams).
    lease_expires_at: datetime | None = None

    def audit_view(self) -> dict[str, JsonValue]:
        """What the audit trail shows of a restore (never a credential)."""
        target: dict[str, JsonValue] = {"type": self.target.type}
        target.update(
            {
                name: getattr(self.target, name)
                for name in ("endpoint", "bucket", "prefix", "host", "port", "database")
                if hasattr(self.target, name)
            }
        )
        return {
            "artifact_id": str(self.artifact_id),
            "state": self.state.value,
            "attempt": self.attempt,
            "target": target,
            "error": self.error,
        }

    @classmethod
    def queued(
        cls,
        restore_id: UUID,
        workspace_id: UUID,
        artifact_id: UUID,
        target: RestoreTarget,
        sealed_credentials: bytes,
        now: datetime,
    ) -> Restore:
        """A new restore waiting for the service to run it."""
        return cls(
            restore_id,
            workspace_id,
            artifact_id,
            target,
            RestoreState.QUEUED,
            now,
            sealed_credentials=sealed_credentials,
        )

    @property
    def finished(self) -> bool:
        """Whether it succeeded or failed."""
        return self.state in FINISHED_RESTORE_STATES

    def start(self, now: datetime, lease: timedelta = RESTORE_LEASE) -> Restore:
        """Taken by a runner: ``running``, held until ``now + lease``. Only a queued
        restore starts."""
        if self.state is not RestoreState.QUEUED:
            raise InvalidStateError(f"restore is {self.state}, not queued")
        return attrs.evolve(
            self, state=RestoreState.RUNNING, started_at=now, lease_expires_at=now + lease
        )

    def holds(self, taken: Restore) -> bool:
        """Whether this (current) record is still the attempt ``taken`` started."""
        return self.state is RestoreState.RUNNING and self.attempt == taken.attempt

    def renew(self, now: datetime, lease: timedelta = RESTORE_LEASE) -> Restore:
        """Its runner is alive: the lease runs until ``now + lease``."""
        if self.state is not RestoreState.RUNNING:
            raise InvalidStateError(f"restore is {self.state}, not running")
        return attrs.evolve(self, lease_expires_at=now + lease)

    def lease_expired(self, now: datetime) -> bool:
        """Whether it is ``running`` and its runner stopped renewing it in time."""
        return (
            self.state is RestoreState.RUNNING
            and self.lease_expires_at is not None
            and self.lease_expires_at <= now
        )

    def expire_lease(self, now: datetime) -> Restore:
        """Its runner is gone: ``queued`` again as the next attempt (an s3 target's objects
        are overwritten; a postgres target was restored in one transaction, so it is still
        empty), or ``failed`` as interrupted after ``MAX_RESTORE_ATTEMPTS``."""
        if not self.lease_expired(now):
            raise InvalidStateError("the restore's lease has not expired")
        if self.attempt >= MAX_RESTORE_ATTEMPTS:
            return self.fail(INTERRUPTED, now)
        return attrs.evolve(
            self,
            state=RestoreState.QUEUED,
            attempt=self.attempt + 1,
            started_at=None,
            lease_expires_at=None,
        )

    def succeed(self, now: datetime) -> Restore:
        """Done: ``succeeded``; the credentials are erased."""
        if self.state is not RestoreState.RUNNING:
            raise InvalidStateError(f"restore is {self.state}, not running")
        return attrs.evolve(
            self,
            state=RestoreState.SUCCEEDED,
            finished_at=now,
            sealed_credentials=None,
            lease_expires_at=None,
        )

    def fail(self, error: str, now: datetime) -> Restore:
        """Given up: ``failed`` with ``error`` (clipped to ``MAX_RESTORE_ERROR``); the
        credentials are erased. A queued restore may fail too (it could not start)."""
        if self.finished:
            raise InvalidStateError(f"restore is already {self.state}")
        return attrs.evolve(
            self,
            state=RestoreState.FAILED,
            finished_at=now,
            error=_clip(error),
            sealed_credentials=None,
            lease_expires_at=None,
        )


def check_restore_kind(
    backup: Backup, target: Source, credentials: Mapping[str, str]
) -> RestoreTarget:
    """The kind rules of a restore (422 ``validation_failed``): only a cloud backup's
    artifacts, only into a target of its source's type, with that type's credentials.
    The target, known now to be one the service restores into."""
    if backup.kind is not BackupKind.CLOUD:
        raise ValidationFailedError(
            f"artifacts of a {backup.kind} backup are restored by their client, not the "
            "service: download the artifact (download-url) and restore it with the "
            "command-line client"
        )
    source = backup.source
    if not isinstance(source, S3Source | PostgresSource):
        raise ValidationFailedError("the backup has no source type the service restores")
    if not isinstance(target, S3Source | PostgresSource) or target.type != source.type:
        raise ValidationFailedError(
            f"target type {target.type} does not match the artifact's source type {source.type}"
        )
    required = CREDENTIAL_FIELDS[target.type]
    if set(credentials) != required:
        raise ValidationFailedError(
            f"credentials for an {target.type} target take exactly: {', '.join(sorted(required))}"
        )
    return target


def check_target_endpoint(target: RestoreTarget, policy: EndpointPolicy) -> None:
    """Refuse (422) a target naming a literal address the outbound policy does not allow
    (contract 13); a name is checked after every resolution, when the service connects."""
    if isinstance(target, S3Source):
        policy.check_endpoint(target.endpoint, "target.endpoint")
        return
    policy.check_host(target.host, "target.host")


def check_restorable(artifact: Artifact) -> None:
    """The artifact's state allows a restore (409 otherwise): deleted is ``conflict``, not
    yet confirmed is ``invalid_state``."""
    if artifact.state is ArtifactState.DELETED:
        raise ConflictError("artifact is deleted")
    if artifact.state is not ArtifactState.AVAILABLE:
        raise InvalidStateError("artifact is not confirmed yet")
