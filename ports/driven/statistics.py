"""Service-wide figures for monitoring (``GET /metrics``), read at scrape time.

Nothing here names a workspace, a person or a record: counts by state, and each
workspace's stored bytes as a bare number in no particular order.
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class PoolUse:
    """The database connection pool of this process, as its pool reports it."""

    in_use: int
    idle: int
    waiting: int
    max_size: int


@attrs.frozen
class ServiceStatistics:
    """One snapshot of the service's figures."""

    runs_by_state: dict[str, int]
    artifacts_by_state: dict[str, int]
    # Available artifacts by what their last verification found (never verified: left out).
    artifacts_by_verification: dict[str, int]
    # One entry per workspace: the bytes of its available artifacts in service storage.
    workspace_storage_bytes: list[int]
    # ``None`` when the store has no connection pool (in memory, SQLite).
    pool: PoolUse | None
    # Backups by the health status the evaluator stored last (contract 16).
    backups_by_health: dict[str, int] = attrs.field(factory=dict)


class StatisticsRepository(Protocol):
    """Counts across every workspace, for monitoring only (never shown to a tenant)."""

    async def runs_by_state(self) -> dict[str, int]:
        """How many runs are in each state (states with none may be left out)."""
        ...

    async def artifacts_by_state(self) -> dict[str, int]:
        """How many artifacts are in each state (states with none may be left out)."""
        ...

    async def artifacts_by_verification(self) -> dict[str, int]:
        """How many available artifacts each verification result has (``pending``,
        ``ok``, ``mismatch``, ``missing``; never-verified ones and results with none may be
        left out)."""
        ...

    async def workspace_storage_bytes(self) -> list[int]:
        """Each workspace's stored bytes (available artifacts in service storage), one
        number per workspace, without the workspace."""
        ...

    async def pool_use(self) -> PoolUse | None:
        """The connection pool's use, or ``None`` without a pool."""
        ...
