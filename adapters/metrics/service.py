"""The service-wide families of ``GET /metrics``, built at scrape time from one snapshot
(``Strongroom.metrics_snapshot``): nothing is counted on the request path, and no label
names a workspace, a person or a record.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from strongroom.domain.artifacts import ArtifactState, Verification
from strongroom.domain.freshness import HealthStatus
from strongroom.domain.runs import RunState
from strongroom.ports.driven.statistics import ServiceStatistics

MIB = 1024 * 1024
# Upper bounds (bytes) of the buckets that count workspaces by what they store; 0 counts
# the workspaces that store nothing.
STORAGE_BUCKETS = (
    0,
    MIB,
    16 * MIB,
    256 * MIB,
    1024 * MIB,
    *(4**n * 1024 * MIB for n in range(1, 7)),
)


class ServiceFamilies(Collector):
    """The families of one snapshot, or the single ``strongroom_statistics_up 0`` when the
    snapshot could not be read."""

    def __init__(self, snapshot: ServiceStatistics | None) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "strongroom_statistics_up",
            "1 when the database answered the service-wide figures of this scrape, else 0.",
            value=int(self._snapshot is not None),
        )
        yield up
        snapshot = self._snapshot
        if snapshot is None:
            return
        yield _by_state("strongroom_runs", "Runs in each state.", RunState, snapshot.runs_by_state)
        yield _by_state(
            "strongroom_artifacts",
            "Artifact records in each state (deleted ones keep their record).",
            ArtifactState,
            snapshot.artifacts_by_state,
        )
        yield _by_state(
            "strongroom_artifact_verifications",
            "Available artifacts by what their last verification found: a mismatch or a "
            "missing object is an artifact whose stored bytes are not what was confirmed.",
            Verification,
            snapshot.artifacts_by_verification,
        )
        yield _by_state(
            "strongroom_backups",
            "Backups by health status (late: no success within its freshness).",
            HealthStatus,
            snapshot.backups_by_health,
            label="status",
        )
        yield _storage(snapshot.workspace_storage_bytes)
        if snapshot.pool is not None:
            yield from _pool(snapshot)


def _by_state(
    name: str,
    documentation: str,
    states: type[RunState] | type[ArtifactState] | type[Verification] | type[HealthStatus],
    counts: dict[str, int],
    label: str = "state",
) -> GaugeMetricFamily:
    """A gauge per state, every state present (0 when none), in the enum's order."""
    family = GaugeMetricFamily(name, documentation, labels=(label,))
    for state in states:
        family.add_metric((state.value,), counts.get(state.value, 0))
    return family


def _storage(stored: list[int]) -> GaugeHistogramMetricFamily:
    """How many workspaces store at most each bucket's bytes (cumulative)."""
    counts = [0] * (len(STORAGE_BUCKETS) + 1)
    for size in stored:
        counts[bisect_left(STORAGE_BUCKETS, size)] += 1
    bounds = [*map(str, STORAGE_BUCKETS), "+Inf"]
    family = GaugeHistogramMetricFamily(
        "strongroom_workspace_storage_bytes",
        "Workspaces by the bytes of their available artifacts in service storage.",
        labels=(),
    )
    family.add_metric([], list(zip(bounds, accumulate(counts), strict=True)), sum(stored))
    return family


def _pool(snapshot: ServiceStatistics) -> Iterator[Metric]:
    pool = snapshot.pool
    assert pool is not None
    connections = GaugeMetricFamily(
        "strongroom_database_connections",
        "Connections of this process's database pool, lent out (in_use) or idle.",
        labels=("state",),
    )
    connections.add_metric(("in_use",), pool.in_use)
    connections.add_metric(("idle",), pool.idle)
    yield connections
    yield GaugeMetricFamily(
        "strongroom_database_connections_waiting",
        "Requests waiting for a connection of this process's database pool.",
        value=pool.waiting,
    )
    yield GaugeMetricFamily(
        "strongroom_database_connections_max",
        "The most connections this process's database pool opens.",
        value=pool.max_size,
    )
