"""Legal holds (contract 15): an artifact, or every artifact of a run, kept from deletion
and expiry until released, with the storage's own legal hold on its object. Releasing
never shortens a lock. Audited ``artifact.hold`` and ``artifact.release`` per artifact."""

from __future__ import annotations

from uuid import UUID

import strongroom.ports.driving.lookups as lookups
from strongroom.domain.artifacts import Artifact, ArtifactState
from strongroom.domain.audit import diff
from strongroom.domain.errors import InvalidStateError
from strongroom.domain.events import Recorded
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.artifacts import Artifacts
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.recording import by_caller

HOLD_ARTIFACT = Requirement((Permission.ARTIFACTS_HOLD,), "artifact.hold")
RELEASE_ARTIFACT = Requirement((Permission.ARTIFACTS_HOLD,), "artifact.release")
HOLD_RUN = Requirement((Permission.ARTIFACTS_HOLD,), "run.hold")
RELEASE_RUN = Requirement((Permission.ARTIFACTS_HOLD,), "run.release")


class Holds:
    """Placing and releasing legal holds; every look-up is scoped to the caller's
    workspace."""

    def __init__(self, deps: Dependencies, access: Access, artifacts: Artifacts) -> None:
        self._deps = deps
        self._access = access
        self._artifacts = artifacts

    async def artifact(self, caller: Caller | Grant, artifact_id: UUID, held: bool) -> Artifact:
        """Hold (or release) one artifact; the artifact as it is now."""
        requirement = HOLD_ARTIFACT if held else RELEASE_ARTIFACT
        caller, workspace_id = await self._access.resolve(
            caller, requirement, target_id=artifact_id
        )
        async with self._deps.uow() as uow:
            artifact = lookups.existing(
                await uow.artifacts.get(workspace_id, artifact_id, for_update=True), "artifact"
            )
            changed = await self._place(uow, caller, artifact, held)
            await uow.commit()
        return changed

    async def run(self, caller: Caller | Grant, run_id: UUID, held: bool) -> Run:
        """Hold (or release) every available artifact of a run; the run."""
        requirement = HOLD_RUN if held else RELEASE_RUN
        caller, workspace_id = await self._access.resolve(caller, requirement, target_id=run_id)
        async with self._deps.uow() as uow:
            run = await lookups.visible_run(
                caller, uow, workspace_id, await uow.runs.get(workspace_id, run_id)
            )
            available = [
                artifact
                for artifact in await uow.artifacts.list_for_run(workspace_id, run_id)
                if artifact.state is ArtifactState.AVAILABLE
            ]
            if not available:
                raise InvalidStateError("the run has no available artifact to hold")
            for found in available:
                artifact = await uow.artifacts.get(workspace_id, found.id, for_update=True)
                if artifact is not None:
                    await self._place(uow, caller, artifact, held)
            await uow.commit()
        return run

    async def _place(
        self, uow: UnitOfWork, caller: Caller, artifact: Artifact, held: bool
    ) -> Artifact:
        """The hold on the object, then on the record, audited; as it was when unchanged."""
        changed = artifact.placed_on_hold(held)
        if changed == artifact:
            return artifact
        backup = await lookups.backup(uow, artifact.workspace_id, artifact.backup_id)
        await self._artifacts.storage_for(artifact, backup).hold(artifact.object_key, held)
        await uow.artifacts.update(changed)
        action = "artifact.hold" if held else "artifact.release"
        recorded = Recorded(action, artifact.id, diff({"held": artifact.held}, {"held": held}))
        uow.collect(by_caller(self._deps, caller, artifact.workspace_id, recorded))
        return changed
