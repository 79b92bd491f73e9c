"""The unit-of-work helper of workspace changes: lock, billing gate, audit, commit."""

from __future__ import annotations

import asyncio

import pytest

from strongroom.domain.billing import BillingState, GatedOperation
from strongroom.domain.errors import BillingRestrictedError
from strongroom.domain.events import Recorded
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.workspaces import Workspace
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driven.identity import Identity
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.changes import WorkspaceChange, changing

ADA = Identity("subject-ada", "ada@example.com", "Ada")


class SimulatedError(Exception):
    """Something that goes wrong in the middle of a change."""


async def _world() -> tuple[Strongroom, Caller, Workspace]:
    facade = bootstrap()
    issued = await facade.sessions.start_session(ADA)
    assert issued.token is not None
    caller = await facade.access.authenticate(issued.token)
    return facade, caller, await facade.workspaces.create(caller, "Acme")


async def _state(facade: Strongroom, workspace: Workspace) -> tuple[str, list[str]]:
    """The workspace's name and its audited actions, newest first."""
    async with facade.deps.uow() as uow:
        stored = await uow.workspaces.get(workspace.id)
        events = await uow.audit.list(workspace.id, AuditFilter(), PageRequest(50))
    assert stored is not None
    return stored.name, [event.action for event in events.items]


async def _rename(change: WorkspaceChange) -> None:
    workspace = await change.gate()
    await change.uow.workspaces.update(workspace.renamed("Renamed", workspace.updated_at))


def test_the_block_commits_the_change_with_its_audit_event() -> None:
    """What the block of ``changing`` did is stored, when it ends, together with the
    event it collected."""

    async def scenario() -> tuple[str, list[str]]:
        facade, caller, workspace = await _world()
        async with changing(facade.deps, caller, workspace.id) as change:
            await _rename(change)
            change.collect(Recorded("workspace.update", workspace.id))
        return await _state(facade, workspace)

    name, actions = asyncio.run(scenario())
    assert name == "Renamed"
    assert actions == ["workspace.update", "workspace.create"]


def test_a_change_that_fails_leaves_nothing() -> None:
    """Neither the change nor its collected event survive an error in the block."""

    async def scenario() -> tuple[str, list[str]]:
        facade, caller, workspace = await _world()

        async def failing() -> None:
            async with changing(facade.deps, caller, workspace.id) as change:
                await _rename(change)
                change.collect(Recorded("workspace.update", workspace.id))
                raise SimulatedError

        with pytest.raises(SimulatedError):
            await failing()
        return await _state(facade, workspace)

    assert asyncio.run(scenario()) == ("Acme", ["workspace.create"])


@pytest.mark.parametrize("lock", [True, False])
def test_the_gate_refuses_what_the_billing_state_refuses(lock: bool) -> None:
    """A blocked workspace refuses configuration writes, locked read or not; the
    refusal names the state."""

    async def scenario() -> None:
        facade, caller, workspace = await _world()
        await facade.workspaces.set_billing_state(workspace.id, BillingState.BLOCKED)
        async with changing(facade.deps, caller, workspace.id) as change:
            with pytest.raises(BillingRestrictedError, match="blocked"):
                await change.gate(GatedOperation.CONFIG_WRITE, lock=lock)
            assert (await change.locked()).billing_state is BillingState.BLOCKED

    asyncio.run(scenario())


def test_the_workspace_is_read_once_per_change() -> None:
    """``locked`` reads the workspace once; later gates see that same locked row."""

    async def scenario() -> None:
        facade, caller, workspace = await _world()
        async with changing(facade.deps, caller, workspace.id) as change:
            first = await change.locked()
            assert await change.gate() is first
            assert await change.gate(GatedOperation.UPLOAD, lock=False) is first

    asyncio.run(scenario())
