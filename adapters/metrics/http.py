"""``GET /metrics``: Prometheus metrics of the HTTP service, with no tenant in any label.

Requests are counted by route template (``/v1/backups/{bid}``, never the id), method and
status, with a latency histogram by route template and method. Each application has its
own registry, so several apps in one process (tests, embedders) never share or clash.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator
from itertools import accumulate

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from strongroom.adapters.metrics.service import ServiceFamilies
from strongroom.domain.errors import StrongroomError, UnauthenticatedError
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
# The service-wide figures are read again once they are this old: scrapes in between cost a
# few milliseconds however many scrapers there are (a read costs 0.26 s on PostgreSQL).
SNAPSHOT_MAX_AGE = 10.0
# While one scrape reads them again, the others are served figures up to this old.
SNAPSHOT_STALE = 15.0 - SNAPSHOT_TIMEOUT
# A rendered exposition is served again for this long (rendering the request figures of
# every route costs 5-20 ms): at most one render a second, however many scrapers.
RENDER_MAX_AGE = 1.0
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


class SnapshotCache:
    """The service-wide figures as last read, read again by one scrape at a time once
    ``SNAPSHOT_MAX_AGE`` old; a failed read (``None``) is kept as long."""

    def __init__(self, max_age: float = SNAPSHOT_MAX_AGE) -> None:
        self._max_age = max_age
        self._value: ServiceStatistics | None = None
        self._read_at = -float("inf")
        self._reading = False

    async def get(
        self, read: Callable[[], Awaitable[ServiceStatistics | None]]
    ) -> ServiceStatistics | None:
        """The figures at most ``max_age`` old (``SNAPSHOT_STALE`` while another scrape
        reads them), from ``read`` when they are not."""
        started = time.monotonic()
        age = started - self._read_at
        if age < self._max_age or (self._reading and age < SNAPSHOT_STALE):
            return self._value
        self._reading = True
        try:
            value = await read()
        finally:
            self._reading = False
        if started > self._read_at:
            self._value, self._read_at = value, started
        return value


class HttpMetrics:
    """The request figures of one application, in a registry of its own.

    Requests are tallied in plain counters (the middleware runs on the event loop only),
    one tally per route template and method, and turned into Prometheus families when
    scraped: a request costs one dictionary look-up and three additions here, where
    prometheus_client's locked Counter and Histogram took 3 us.
    """

    def __init__(self, token: str | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._tallies: dict[tuple[str, str], _Tally] = {}
        self.registry.register(_Families(self))
        self.snapshots = SnapshotCache()
        self.token = token
        self._rendered: tuple[float, object, bytes] = (-float("inf"), None, b"")

    def admits(self, authorization: str | None) -> bool:
        """Whether a scrape with this ``Authorization`` header may read the figures: any
        without a token configured, else only ``Bearer <token>``."""
        if self.token is None:
            return True
        scheme, _, presented = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self.token.encode()
        )

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

    def render_recent(self, snapshot: ServiceStatistics | None, key: object) -> bytes:
        """``render(snapshot)``, or the same text rendered less than ``RENDER_MAX_AGE`` ago
        for the same ``snapshot`` and ``key`` (what else the exposition shows)."""
        now = time.monotonic()
        rendered_at, rendered_for, text = self._rendered
        if now - rendered_at < RENDER_MAX_AGE and rendered_for == (id(snapshot), key):
            return text
        text = self.render(snapshot)
        self._rendered = (now, (id(snapshot), key), text)
        return text


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
    No label names a workspace or a person. The service-wide figures are at most 15 s
    old. With `STRONGROOM_METRICS_TOKEN` set, only `Authorization: Bearer <token>` is
    answered (401 otherwise)."""
    metrics: HttpMetrics = request.app.state.metrics
    if not metrics.admits(request.headers.get("authorization")):
        raise UnauthenticatedError("/metrics requires the metrics token as a bearer")
    facade: Strongroom = request.state.facade

    async def read() -> ServiceStatistics | None:
        try:
            return await asyncio.wait_for(facade.metrics_snapshot(), SNAPSHOT_TIMEOUT)
        except (StrongroomError, TimeoutError) as error:
            logger.warning("/metrics: the service-wide figures could not be read: %r", error)
            return None

    snapshot = await metrics.snapshots.get(read)
    text = metrics.render_recent(snapshot, facade.verification.mismatches)
    return Response(text, media_type=CONTENT_TYPE)
