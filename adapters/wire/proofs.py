"""Immutability proofs of a workspace, signed by the service (contract 16)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.proofs import Finding as DomainFinding
from strongroom.domain.proofs import Proof as DomainProof
from strongroom.domain.proofs import ProofEntry as DomainProofEntry
from strongroom.domain.proofs import StorageLock as DomainStorageLock


@view_of(DomainStorageLock)
@attrs.frozen
class StorageLock:
    """What the storage itself reported of the object when asked (all null where it keeps
    no lock, or no longer has the object)."""

    version_id: str | None
    """The object version the lock is on (S3)."""
    mode: str | None
    """`COMPLIANCE` or `GOVERNANCE` (S3 Object Lock), `COMPLIANCE` for local disk's own
    locks; null when none."""
    retain_until: datetime | None
    legal_hold: bool | None


@view_of(DomainProofEntry)
@attrs.frozen
class ProofArtifact:
    """One available artifact in service storage: its record and the storage's answer."""

    id: UUID = attrs.field(metadata=meta(get="artifact_id"))
    backup_id: UUID
    size: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    sha256: str
    locked_until: datetime | None
    """Until when the service's record says it cannot be deleted."""
    held: bool
    """Whether the record says a legal hold keeps it."""
    storage: StorageLock
    checked_at: datetime


@view_of(DomainFinding)
@attrs.frozen
class ProofFinding:
    """An artifact the storage protects less than its record says."""

    artifact_id: UUID
    problem: str


@attrs.frozen
class ProofSignature:
    """The service's signature over the document without this member (canonical JSON:
    keys sorted, no spaces, UTF-8)."""

    algorithm: str
    """`ed25519`."""
    key_id: str
    """The first 16 hex digits of the SHA-256 of the raw public key."""
    value: str
    """The signature, base64."""


@view_of(DomainProof)
@attrs.frozen
class Proof:
    """A signed immutability proof: check it with the key at
    `/.well-known/strongroom-proof-key` (`strongroom proof verify FILE`)."""

    version: int
    workspace_id: UUID
    checked_at: datetime
    artifacts: list[ProofArtifact] = attrs.field(metadata=meta(get="entries"))
    findings: list[ProofFinding]
    """Artifacts whose storage lock is shorter than their record, or whose hold the storage
    does not keep; empty when the storage keeps every promise."""
    signature: ProofSignature | None = attrs.field(
        default=None, metadata=meta(get=lambda _proof: None, optional=True)
    )
