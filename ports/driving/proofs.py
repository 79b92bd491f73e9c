"""Immutability proofs (contract 16): what a workspace's available artifacts in service
storage are promised (``locked_until``, a legal hold) beside what the storage itself says
of each when asked now (``LockReporting``), signed with the service's key.

The use case gathers the proof; the driving adapter renders it and has it signed
(``sign``), so the bytes signed are the bytes answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage
from strongroom.domain.errors import UpstreamUnavailableError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.proofs import Proof, ProofEntry, StorageLock
from strongroom.ports.driven.proofs import LockReporting, ProofSigning
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.dependencies import Dependencies

READ_PROOF = Requirement((Permission.ARTIFACTS_READ,))
PAGE = 200


def _held(artifact: Artifact) -> bool:
    """Whether a legal hold keeps the artifact (False where artifacts have no holds)."""
    return bool(getattr(artifact, "held", False))


class Proofs:
    """Gather and sign immutability proofs."""

    def __init__(
        self, deps: Dependencies, access: Access, signer: ProofSigning | None = None
    ) -> None:
        self._deps = deps
        self._access = access
        self.signer = signer

    async def gather(self, caller: Caller | Grant, workspace_id: UUID) -> Proof:
        """``GET /v1/workspaces/{wid}/proof``: every available artifact of the workspace
        in service storage, with what the storage reports of its lock now."""
        await self._access.resolve(caller, READ_PROOF, workspace_id=workspace_id)
        artifacts: list[Artifact] = []
        page = PageRequest(limit=PAGE)
        async with self._deps.uow() as uow:
            while True:
                found = await uow.artifacts.list(workspace_id, False, page)
                artifacts.extend(found.items)
                if found.next_cursor is None:
                    break
                page = PageRequest(limit=PAGE, after=found.next_cursor)
        storage = self._deps.storage
        entries: list[ProofEntry] = []
        for artifact in sorted(artifacts, key=lambda a: (a.created_at, a.id)):
            if artifact.state is not ArtifactState.AVAILABLE:
                continue
            if artifact.storage is not ArtifactStorage.SERVICE:
                continue
            reported = (
                await storage.lock_status(artifact.object_key)
                if isinstance(storage, LockReporting)
                else StorageLock()
            )
            entries.append(
                ProofEntry(
                    artifact_id=artifact.id,
                    backup_id=artifact.backup_id,
                    size=artifact.size,
                    sha256=artifact.sha256,
                    locked_until=artifact.locked_until,
                    held=_held(artifact),
                    storage=reported,
                    checked_at=self._deps.clock.now(),
                )
            )
        return Proof(workspace_id, self._deps.clock.now(), tuple(entries))

    def sign(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """The rendered proof with the service's signature."""
        if self.signer is None:
            raise UpstreamUnavailableError("the service has no proof key")
        return self.signer.sign(document)

    def public_key(self) -> str:
        """The service's proof key, PEM (``/.well-known/strongroom-proof-key``)."""
        if self.signer is None:
            raise UpstreamUnavailableError("the service has no proof key")
        return self.signer.public_pem()
