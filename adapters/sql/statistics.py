"""Service-wide figures of a SQL database, for monitoring: four grouped counts and the
pool's own report."""

from __future__ import annotations

from typing import Protocol

from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.statements import Statements
from strongroom.ports.driven.statistics import PoolUse


class PooledStatements(Statements, Protocol):
    """Statements that can also say how their connection pool is used."""

    async def pool_use(self) -> PoolUse | None:
        """The pool's use, or ``None`` without a pool."""
        ...


class SqlStatisticsRepository:
    """Counts across every workspace; nothing in the answers names one."""

    def __init__(self, statements: PooledStatements) -> None:
        self._db = statements

    async def _counts(self, query: Q) -> dict[str, int]:
        return {str(row["state"]): int(row["n"]) for row in await self._db.fetch_all(query, {})}

    async def runs_by_state(self) -> dict[str, int]:
        """How many runs are in each state."""
        return await self._counts(Q.STATISTICS_RUNS_BY_STATE)

    async def artifacts_by_state(self) -> dict[str, int]:
        """How many artifacts are in each state."""
        return await self._counts(Q.STATISTICS_ARTIFACTS_BY_STATE)

    async def artifacts_by_verification(self) -> dict[str, int]:
        """How many available artifacts each verification result has."""
        return await self._counts(Q.STATISTICS_ARTIFACTS_BY_VERIFICATION)

    async def workspace_storage_bytes(self) -> list[int]:
        """Each workspace's stored bytes, without the workspace."""
        found = await self._db.fetch_all(Q.STATISTICS_WORKSPACE_STORAGE_BYTES, {})
        return [int(row["n"]) for row in found]

    async def pool_use(self) -> PoolUse | None:
        """The pool's use, as the driver's pool reports it."""
        return await self._db.pool_use()
