"""``GET /metrics``: Prometheus metrics of the HTTP service, with no tenant in any label.

Requests are counted by route template (``/v1/backups/{bid}``, never the id), method and
status, with a latency histogram by route template and method. Each application has its
own registry, so several apps in one process (tests, embedders) never share or clash.
"""

from __future__ import annotations

import asyncio
import logging
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from strongroom.adapters.metrics.service import ServiceFamilies
from strongroom.domain.errors import StrongroomError
from strongroom.ports.driven.statistics import ServiceStatistics
from strongroom.ports.driving import Strongroom

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNMATCHED = "unmatched"
# One event per request (when access logs are on): never a path with ids, a query or a
# header, so never a token.
ACCESS = logging.getLogger("strongroom.access")
# Latencies of an API whose fast paths answer in about a millisecond.
# A scrape waits this long for the service-wide figures, then answers without them.
SNAPSHOT_TIMEOUT = 5.0
logger = logging.getLogger(__name__)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _Tally:
    """The figures of one route template and method: answers by status, requests in each
    latency bucket (not cumulative) and their total time."""

    __slots__ = ("buckets", "seconds", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.buckets = [0] * (len(BUCKETS) + 1)
        self.seconds = 0.0


class HttpMetrics:
    """The request figures of one application, in a registry of its own.

    Requests are tallied in plain counters (the middleware runs on the event loop only),
    one tally per route template and method, and turned into Prometheus families when
    scraped: a request costs one dictionary look-up and three additions here, where
    prometheus_client's locked Counter and Histogram took 3 us.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._tallies: dict[tuple[str, str], _Tally] = {}
        self.registry.register(_Families(self))

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        tally = self._tallies.get((route, method))
        if tally is None:
            tally = self._tallies[(route, method)] = _Tally()
        statuses = tally.statuses
        statuses[status] = statuses.get(status, 0) + 1
        tally.buckets[bisect_left(BUCKETS, seconds)] += 1
        tally.seconds += seconds

    def render(self, snapshot: ServiceStatistics | None = None) -> bytes:
        """The exposition text of every request metric, and of the service-wide figures of
        ``snapshot`` (``strongroom_statistics_up 0`` alone when it is ``None``)."""
        service = CollectorRegistry(auto_describe=False)
        service.register(ServiceFamilies(snapshot))
        return generate_latest(self.registry) + generate_latest(service)


class _Families(Collector):
    """The tallies of an ``HttpMetrics`` as Prometheus metric families."""

    def __init__(self, metrics: HttpMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        tallies = sorted(self._metrics._tallies.items())
        answered = CounterMetricFamily(
            "strongroom_http_requests",
            "HTTP requests answered, by route template, method and status.",
            labels=("route", "method", "status"),
        )
        for (route, method), tally in tallies:
            for status, count in sorted(tally.statuses.items()):
                answered.add_metric((route, method, str(status)), count)
        yield answered
        latency = HistogramMetricFamily(
            "strongroom_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route template.",
            labels=("route", "method"),
        )
        bounds = [*map(str, BUCKETS), "+Inf"]
        for key, tally in tallies:
            cumulative = list(accumulate(tally.buckets))
            latency.add_metric(key, list(zip(bounds, cumulative, strict=True)), tally.seconds)
        yield latency


def record(
    metrics: HttpMetrics, scope: Scope, status: int, seconds: float, access_log: bool
) -> None:
    """Count an answered request by the route template that answered it (the request-id
    layer times it), and log its access event to ``strongroom.access`` when ``access_log``."""
    template = getattr(scope.get("route"), "path", UNMATCHED)
    metrics.observe(template, scope["method"], status, seconds)
    if access_log:
        _log_access(scope, template, status, seconds)


def _log_access(scope: Scope, template: str, status: int, seconds: float) -> None:
    state = scope.get("state") or {}
    principal = state.get("principal") if status != 401 else None
    if callable(principal):  # the handler left it to be worked out when needed
        principal = principal()
    ACCESS.info(
        "%s %s %d",
        scope["method"],
        template,
        status,
        extra={
            "request_id": state.get("request_id"),
            "method": scope["method"],
            "route": template,
            "status": status,
            "duration_ms": round(seconds * 1000, 3),
            "principal": principal or "anonymous",
        },
    )


async def metrics_endpoint(request: Request) -> Response:
    """Prometheus metrics

    Request counts and latencies by route template, method and status; runs and artifacts
    by state, workspaces by stored bytes and the database pool's use, read when scraped.
    No label names a workspace or a person."""
    metrics: HttpMetrics = request.app.state.metrics
    facade: Strongroom = request.state.facade
    try:
        snapshot = await asyncio.wait_for(facade.metrics_snapshot(), SNAPSHOT_TIMEOUT)
    except (StrongroomError, TimeoutError) as error:
        logger.warning("/metrics: the service-wide figures could not be read: %r", error)
        snapshot = None
    return Response(metrics.render(snapshot), media_type=CONTENT_TYPE)
