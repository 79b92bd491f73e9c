"""The storage quota's usage is a sum over every artifact of a workspace, a cost that grows
with each run: uploads and cloud runs compute it only when the workspace has a storage
limit, so a workspace without one (the default) confirms its thousandth run as cheaply as
its first (seen in the simulated day of tests/integration/test_scheduler_postgres.py)."""

from __future__ import annotations

import pytest
from test_service_executor import FakeReaders, cloud_backup, executor

from strongroom.adapters.memory.backup_repositories import MemoryArtifactRepository
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import RunState
from strongroom.ports.driving import Strongroom
from support.people import active_manual, workspace_admin


@pytest.fixture
def sums(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every computation of a workspace's storage usage, as it happens."""
    made: list[object] = []
    summing = MemoryArtifactRepository.storage_bytes

    async def counted(self: MemoryArtifactRepository, *args: object, **options: bool) -> int:
        made.append(args)
        return await summing(self, *args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryArtifactRepository, "storage_bytes", counted)
    return made


async def test_without_a_storage_limit_nothing_sums_the_workspace(
    facade: Strongroom, sums: list[object]
) -> None:
    """A client's upload and a cloud run's confirm: no sum of the workspace's storage."""
    ada, _ = await workspace_admin(facade, "ada@example.com")
    run = await facade.runs.start(ada, await active_manual(facade, ada))
    await facade.artifacts.upload_url(ada, run.id, "db.dump", 3, "ab" * 32)
    await facade.runs.trigger(ada, await cloud_backup(facade, ada))
    held = await facade.service_runs.claim()
    assert held is not None
    ended = await executor(facade, FakeReaders(b"archive")).execute(held)
    assert ended is not None
    assert ended.state is RunState.SUCCEEDED
    assert sums == []


async def test_with_a_storage_limit_a_cloud_run_past_it_fails(
    facade: Strongroom, sums: list[object]
) -> None:
    """10 bytes of storage, an 11-byte archive: the run fails with ``storage_bytes``."""
    ada, wid = await workspace_admin(facade, "ada@example.com")
    await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, 10)
    await facade.runs.trigger(ada, await cloud_backup(facade, ada))
    held = await facade.service_runs.claim()
    assert held is not None
    ended = await executor(facade, FakeReaders(b"11 bytes..."), heartbeat_every=5).execute(held)
    assert ended is not None
    assert ended.state is RunState.FAILED
    assert "storage_bytes" in (ended.error or "")
    assert sums
