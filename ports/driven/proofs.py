"""Immutability proofs (contract 16): the service's signing key, and what a storage says
of an object's lock when asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from strongroom.domain.proofs import StorageLock


class ProofSigning(Protocol):
    """The service's proof key."""

    def sign(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """The document with its ``signature`` member."""
        ...

    def public_pem(self) -> str:
        """The public key, PEM."""
        ...


@runtime_checkable
class LockReporting(Protocol):
    """An object storage that tells what lock it keeps on an object."""

    async def lock_status(self, key: str) -> StorageLock:
        """The object's version, lock mode, retain-until and legal hold, as the storage
        reports them now (all None for an object it no longer has)."""
        ...
