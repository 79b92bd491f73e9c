"""``workspaces.quotas`` and the operator's ``set_quota`` through the facade: usage counted
from what the workspace holds, the effective limit, the audit of a change.

Moved down from ``tests/http/test_quotas.py``, which keeps the wire shape and the order of
checks of ``GET /v1/workspaces/{wid}/quotas``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupKind
from strongroom.domain.principals import SYSTEM_ACTOR, Caller
from strongroom.domain.quotas import Quota, QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import audit_events, join, workspace_admin

DEFAULTS = [
    Quota(QuotaResource.BACKUPS_PER_WORKSPACE, 100, 0),
    Quota(QuotaResource.WORKERS_PER_WORKSPACE, 10, 0),
    Quota(QuotaResource.API_KEYS_PER_WORKSPACE, 25, 0),
    Quota(QuotaResource.MEMBERS_PER_WORKSPACE, 0, 1),
    Quota(QuotaResource.STORAGE_BYTES, 0, 0),
]


async def by_resource(facade: Strongroom, caller: Caller) -> dict[QuotaResource, Quota]:
    """The caller's workspace's quotas keyed by resource."""
    quotas = await facade.workspaces.quotas(caller, caller.scoped_workspace())
    return {quota.resource: quota for quota in quotas}


async def test_a_new_workspace_has_the_defaults(facade: Strongroom) -> None:
    """All five resources with their default limits; the creator is its one member."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    assert await facade.workspaces.quotas(ada, wid) == DEFAULTS


async def test_usage_counts_backups_and_members(facade: Strongroom) -> None:
    """Backups and members are counted; a viewer sees the same figures."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    for number in range(3):
        await facade.backups.create(ada, wid, f"B{number}", BackupKind.MANUAL)
    vera = await join(facade, ada, wid, "vera@example.com", "viewer")
    entries = await by_resource(facade, ada)
    assert entries[QuotaResource.BACKUPS_PER_WORKSPACE].usage == 3
    assert entries[QuotaResource.MEMBERS_PER_WORKSPACE].usage == 2
    assert await by_resource(facade, vera) == entries


async def test_operator_limit_is_effective_and_audited_as_system(
    facade: Strongroom, clock: ManualClock
) -> None:
    """``set_quota`` changes the reported limit and is audited ``quota.update`` by the
    system, with the change of that resource, no request id, the workspace as target."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 3)
    clock.advance(timedelta(seconds=1))
    await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 1024)
    entries = await by_resource(facade, ada)
    assert entries[QuotaResource.BACKUPS_PER_WORKSPACE].limit == 3
    assert entries[QuotaResource.STORAGE_BYTES].limit == 1024
    assert entries[QuotaResource.WORKERS_PER_WORKSPACE].limit == 10
    events = await audit_events(facade, ada, "quota.update")
    assert [e.changes for e in events] == [
        {"storage_bytes": Change(0, 1024)},
        {"backups_per_workspace": Change(100, 3)},
    ]
    for event in events:
        assert event.actor == SYSTEM_ACTOR
        assert event.outcome is Outcome.SUCCESS
        assert event.request_id is None
        assert event.target_id == str(wid)


async def test_a_negative_limit_is_refused(facade: Strongroom) -> None:
    """An operator cannot set a negative limit; the reported limits are unchanged."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    with pytest.raises(ValueError, match="limit"):
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, -1)
    assert await facade.workspaces.quotas(ada, wid) == DEFAULTS
