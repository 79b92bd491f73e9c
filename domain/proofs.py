"""Immutability proofs (contract section 16): what the records say is locked, beside what
the storage itself said when asked, and where the two disagree.

The service builds a proof from its artifact records and the storage's own answers
(object version, lock mode, retain-until, legal hold), signs it, and anyone holding the
public key checks it offline. :func:`findings` is the one judgement of a proof's entries,
used by the service before it signs and by ``strongroom proof verify`` after.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

import attrs

PROOF_VERSION = 1


@attrs.frozen
class StorageLock:
    """What the storage reported for an object; all None where it keeps no lock (local
    disk) or the object is gone."""

    version_id: str | None = None
    mode: str | None = None
    retain_until: datetime | None = None
    legal_hold: bool | None = None


@attrs.frozen
class ProofEntry:
    """One available artifact: the record's promise and the storage's answer."""

    artifact_id: UUID
    backup_id: UUID
    size: int
    sha256: str
    locked_until: datetime | None
    held: bool
    storage: StorageLock
    checked_at: datetime


@attrs.frozen
class Finding:
    """An artifact whose storage protects it less than its record says."""

    artifact_id: UUID
    problem: str


@attrs.frozen
class Proof:
    """What a workspace's available artifacts in service storage are promised and what the
    storage said of each, at ``checked_at``."""

    workspace_id: UUID
    checked_at: datetime
    entries: tuple[ProofEntry, ...]
    version: int = PROOF_VERSION

    @property
    def findings(self) -> list[Finding]:
        """Where the storage protects less than the records say."""
        return findings(self.entries)


def findings(entries: Iterable[ProofEntry]) -> list[Finding]:
    """Every entry whose storage lock ends before the record's, or whose hold the storage
    does not keep. Only entries checked while still inside their lock can be judged: an
    expired lock needs no storage lock."""
    found: list[Finding] = []
    for entry in entries:
        storage = entry.storage
        if entry.locked_until is not None and entry.locked_until > entry.checked_at:
            if storage.retain_until is None:
                found.append(Finding(entry.artifact_id, "the storage keeps no lock"))
            elif storage.retain_until < entry.locked_until:
                found.append(
                    Finding(entry.artifact_id, "the storage lock ends before the record's")
                )
            elif storage.mode is not None and storage.mode.upper() != "COMPLIANCE":
                found.append(
                    Finding(entry.artifact_id, f"the storage lock is {storage.mode.lower()}")
                )
        if entry.held and storage.legal_hold is False:
            found.append(Finding(entry.artifact_id, "the storage keeps no legal hold"))
    return found
