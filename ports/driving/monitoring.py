"""The monitoring snapshot that ``GET /metrics`` turns into gauges at scrape time."""

from __future__ import annotations

from strongroom.ports.driven.statistics import ServiceStatistics
from strongroom.ports.driving.dependencies import Dependencies


async def metrics_snapshot(deps: Dependencies) -> ServiceStatistics:
    """Runs and artifacts by state, available artifacts by verification result, each
    workspace's stored bytes (no workspace named) and the connection pool's use, read in
    one unit of work.

    The pool is asked first, before the unit takes a connection, so the snapshot does not
    count itself as a connection in use.
    """
    async with deps.uow() as uow:
        pool = await uow.statistics.pool_use()
        return ServiceStatistics(
            runs_by_state=await uow.statistics.runs_by_state(),
            artifacts_by_state=await uow.statistics.artifacts_by_state(),
            artifacts_by_verification=await uow.statistics.artifacts_by_verification(),
            workspace_storage_bytes=await uow.statistics.workspace_storage_bytes(),
            pool=pool,
            backups_by_health={
                status.value: count for status, count in (await uow.health.counts()).items()
            },
        )
