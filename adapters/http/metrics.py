"""``GET /metrics``: Prometheus metrics of the HTTP service, with no tenant in any label.

Requests are counted by route template (``/v1/backups/{bid}``, never the id), method and
status, with a latency histogram by route template and method. Each application has its
own registry, so several apps in one process (tests, embedders) never share or clash.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNMATCHED = "unmatched"
# Latencies of an API whose fast paths answer in about a millisecond.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class HttpMetrics:
    """The metrics of one application, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter(
            "strongroom_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ("route", "method", "status"),
            registry=self.registry,
        )
        self._latency = Histogram(
            "strongroom_http_request_duration_seconds",
            "Time from a request's arrival to its response's start, by route template.",
            ("route", "method"),
            buckets=BUCKETS,
            registry=self.registry,
        )
        # labels() takes a lock and builds a key on every call: children are kept here.
        self._counted: dict[tuple[str, str, str], Any] = {}
        self._timed: dict[tuple[str, str], Any] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        key = (route, method, str(status))
        counter = self._counted.get(key)
        if counter is None:
            counter = self._counted[key] = self._requests.labels(*key)
        counter.inc()
        timed = self._timed.get(key[:2])
        if timed is None:
            timed = self._timed[key[:2]] = self._latency.labels(route, method)
        timed.observe(seconds)

    def render(self) -> bytes:
        """The exposition text of every metric."""
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Times and counts every HTTP request by the route template that answered it."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", UNMATCHED)
            elapsed = time.perf_counter() - started
            self.metrics.observe(template, scope["method"], status, elapsed)


async def metrics_endpoint(request: Request) -> Response:
    """Prometheus metrics

    Request counts and latencies by route template, method and status. No label names a
    workspace or a person."""
    metrics: HttpMetrics = request.app.state.metrics
    return Response(metrics.render(), media_type=CONTENT_TYPE)
