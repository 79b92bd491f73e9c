"""Artifacts: the files a run delivers, their retention and lock, and the upload plan."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue, diff
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.errors import (
    ArtifactHeldError,
    ArtifactLockedError,
    ArtifactReferencedError,
    ConflictError,
    InvalidRequestError,
    InvalidStateError,
    LastArtifactError,
    NotInOurStorageError,
)
from strongroom.domain.events import Recorded
from strongroom.domain.timestamps import format_timestamp

MAX_ARTIFACT_NAME = 255
MIB = 1024 * 1024
DEFAULT_MULTIPART_THRESHOLD = 64 * MIB
DEFAULT_PART_SIZE = 16 * MIB
MAX_PARTS = 10_000
# The largest object S3 stores (5 TiB), the largest artifact accepted.
MAX_ARTIFACT_SIZE = 5 * 1024**4
PRESIGNED_URL_LIFETIME = timedelta(minutes=15)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ArtifactState(StrEnum):
    """Announced (``pending``), confirmed in storage (``available``), or ``deleted``."""

    PENDING = "pending"
    AVAILABLE = "available"
    DELETED = "deleted"


class Verification(StrEnum):
    """What the last check of an artifact's bytes against its sha256 found (contract 11
    and 13): ``pending`` until a multipart upload is re-read, then ``ok``, ``mismatch`` or
    ``missing`` (the object is gone from storage)."""

    PENDING = "pending"
    OK = "ok"
    MISMATCH = "mismatch"
    MISSING = "missing"


class ArtifactStorage(StrEnum):
    """Where the bytes live: the service's own storage or only the customer's bucket."""

    SERVICE = "service"
    CUSTOMER = "customer"


def clean_artifact_name(name: str) -> str:
    """An artifact name: 1 to 255 characters, no control characters (400 otherwise)."""
    if not 1 <= len(name) <= MAX_ARTIFACT_NAME or any(
        ord(char) < 32 or ord(char) == 127 for char in name
    ):
        raise InvalidRequestError(
            f"name must be 1 to {MAX_ARTIFACT_NAME} characters without control characters"
        )
    return name


def check_size(size: int) -> int:
    """A size in bytes, 0 to 5 TiB (400 otherwise)."""
    if not 0 <= size <= MAX_ARTIFACT_SIZE:
        raise InvalidRequestError(f"size must be 0 to {MAX_ARTIFACT_SIZE} bytes")
    return size


def check_sha256(sha256: str) -> str:
    """64 lowercase hexadecimal digits (uppercase is accepted and lowered; 400 otherwise)."""
    lowered = sha256.lower()
    if not _SHA256.match(lowered):
        raise InvalidRequestError("sha256 must be 64 hexadecimal digits")
    return lowered


@attrs.frozen
class PartPlan:
    """How a multipart upload is cut: every part ``part_size`` bytes, the last the rest."""

    size: int
    part_size: int

    @classmethod
    def for_size(cls, size: int, part_size: int = DEFAULT_PART_SIZE) -> PartPlan:
        """Parts of ``part_size``, grown by whole MiB when 10 000 parts would not suffice."""
        while -(-size // part_size) > MAX_PARTS:
            part_size += MIB
        return cls(size, part_size)

    @property
    def count(self) -> int:
        """How many parts."""
        return max(1, -(-self.size // self.part_size))

    def part_length(self, number: int) -> int:
        """The exact length of part ``number`` (1-based)."""
        if number < self.count:
            return self.part_size
        return self.size - self.part_size * (self.count - 1)


def locked(state: ArtifactState, locked_until: datetime | None, now: datetime) -> bool:
    """Whether an artifact in ``state`` locked until ``locked_until`` is inside its lock
    window at ``now``."""
    return state is ArtifactState.AVAILABLE and locked_until is not None and now < locked_until


@attrs.frozen
class Artifact:
    """One file of a run, recorded from its announcement to its deletion."""

    id: UUID
    workspace_id: UUID
    backup_id: UUID
    run_id: UUID
    name: str
    size: int
    sha256: str
    state: ArtifactState
    storage: ArtifactStorage
    object_key: str
    created_at: datetime
    upload_id: str | None = None
    expires_at: datetime | None = None
    locked_until: datetime | None = None
    verification: Verification | None = None
    verified_at: datetime | None = None
    # Under a legal hold: never deleted or expired until released (contract 15).
    held: bool = False

    def is_locked(self, now: datetime) -> bool:
        """Whether it is inside its lock window."""
        return locked(self.state, self.locked_until, now)

    def is_expired(self, now: datetime) -> bool:
        """Whether its retention has run out."""
        return (
            self.state is ArtifactState.AVAILABLE
            and not self.held
            and self.expires_at is not None
            and now >= self.expires_at
        )

    def confirmed(
        self, retention: RetentionPolicy, now: datetime, *, digest_checked: bool = True
    ) -> Artifact:
        """Available, with expiry and lock counted from ``now``. ``digest_checked``: the
        store compared the bytes with the sha256 on the way in (verified ``ok`` now);
        otherwise (a multipart upload on S3) verification is ``pending``."""
        return attrs.evolve(
            self,
            state=ArtifactState.AVAILABLE,
            upload_id=None,
            expires_at=now + timedelta(seconds=retention.expire_after.seconds),
            locked_until=now + timedelta(seconds=retention.lock_for.seconds),
            verification=Verification.OK if digest_checked else Verification.PENDING,
            verified_at=now if digest_checked else None,
        )

    def written(self, size: int, sha256: str) -> Artifact:
        """A pending artifact the service streamed itself (a cloud run's), once its stream
        ended: its size and sha256 are known only now."""
        if self.state is not ArtifactState.PENDING:
            raise ConflictError(f"artifact is {self.state}: only a pending one is written")
        return attrs.evolve(self, size=check_size(size), sha256=check_sha256(sha256))

    def audit_view(self) -> dict[str, JsonValue]:
        """What the audit trail shows of an artifact."""
        return {
            "run_id": str(self.run_id),
            "name": self.name,
            "size": self.size,
            "state": self.state.value,
            "storage": self.storage.value,
        }

    def recorded_verification(self, after: Artifact) -> Recorded:
        """``artifact.verify``: the verification state before and after (``verified_at``
        is the event's time)."""

        def shown(artifact: Artifact) -> dict[str, JsonValue]:
            state = artifact.verification
            return {"verification": None if state is None else state.value}

        return Recorded("artifact.verify", self.id, diff(shown(self), shown(after)))

    def verification_requested(self) -> Artifact:
        """The record after ``verify`` was asked: its verification ``pending`` until its bytes
        are re-read (``conflict`` for a deleted artifact, ``invalid_state`` for one not
        confirmed yet)."""
        if self.state is ArtifactState.DELETED:
            raise ConflictError("artifact is deleted")
        if self.state is not ArtifactState.AVAILABLE:
            raise InvalidStateError("artifact is not confirmed yet")
        return attrs.evolve(self, verification=Verification.PENDING)

    def verified(self, found: Verification, now: datetime) -> Artifact:
        """The record after its bytes were re-read at ``now``."""
        return attrs.evolve(self, verification=found, verified_at=now)

    def ensure_deletable(
        self, now: datetime, available_in_backup: int, *, referenced: bool = False
    ) -> None:
        """Contract 15's precedence: deleted (conflict), locked, held, referenced by a live
        snapshot (``referenced``, contract 14), then last of its backup."""
        if self.state is ArtifactState.DELETED:
            raise ConflictError("artifact is already deleted")
        if self.is_locked(now):
            until = format_timestamp(self.locked_until) if self.locked_until else ""
            raise ArtifactLockedError(f"artifact is inside its lock window until {until}")
        if self.held:
            raise ArtifactHeldError("artifact is under a legal hold")
        if referenced:
            raise ArtifactReferencedError("a live snapshot references this artifact")
        if self.state is ArtifactState.AVAILABLE and available_in_backup <= 1:
            raise LastArtifactError("artifact is the only one left for its backup")

    def ensure_downloadable(self) -> None:
        """A download needs an available artifact in the service's storage: deleted
        (conflict), only in the customer's bucket, then not confirmed yet."""
        if self.state is ArtifactState.DELETED:
            raise ConflictError("artifact is deleted")
        if self.storage is ArtifactStorage.CUSTOMER:
            raise NotInOurStorageError("artifact was delivered only to the customer's own bucket")
        if self.state is not ArtifactState.AVAILABLE:
            raise InvalidStateError("artifact is not confirmed yet")

    def placed_on_hold(self, held: bool) -> Artifact:
        """Held (or released): only a confirmed artifact takes a legal hold (a deleted one
        is ``conflict``, a pending one ``invalid_state``); its lock stays as it is."""
        if self.state is ArtifactState.DELETED:
            raise ConflictError("artifact is deleted")
        if self.state is not ArtifactState.AVAILABLE:
            raise InvalidStateError("artifact is not confirmed yet")
        return attrs.evolve(self, held=held)

    def deleted(self) -> Artifact:
        """The record that stays once the object is gone."""
        return attrs.evolve(self, state=ArtifactState.DELETED, upload_id=None)
