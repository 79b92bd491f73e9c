"""The ASGI factory: ``uvicorn --factory strongroom.entrypoints.http:create_app``."""

from __future__ import annotations

import contextlib
import gc
import socket
from functools import partial
from typing import Any

from starlette.applications import Starlette

from strongroom.adapters.http.app import begin_drain, build_app
from strongroom.entrypoints.service import open_serving_facade
from strongroom.entrypoints.settings import Settings


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> Starlette:
    """The application for ``settings`` (default: from the environment); pending migrations
    are applied at start unless ``migrate`` is false, and the retention job runs on its
    interval for the application's lifetime."""
    settings = settings or Settings.from_env()
    return build_app(
        partial(open_serving_facade, settings, migrate=migrate),
        environment=settings.environment,
        public_url=settings.public_url,
        access_log=settings.access_log,
        cors_origins=settings.cors_origins,
        metrics_token=settings.metrics_token,
    )


def freeze_start_up_objects() -> None:
    """Keep the objects alive once the server has started (modules, the app, its pools and
    caches: they live as long as the process) out of every later garbage collection
    (``gc.freeze``), after collecting what start-up left behind.

    A full collection walks every tracked object: on a started server it took 53-59 ms,
    several times in a few seconds under a thousand creates a second, and each one held up
    every request of the process (a p99 of 70-120 ms at half the maximum rate). Frozen,
    those objects are never walked again; only what is allocated later is.
    """
    gc.collect()
    gc.freeze()


def run_until_stopped(app: Starlette, **options: Any) -> bool:
    """``uvicorn.run(app, **options)`` (``options`` are ``uvicorn.Config``'s) whose graceful
    stop first lets long-polling claims answer, so they do not hold the drain for up to
    their ``wait_seconds``, and whose start ends with ``freeze_start_up_objects``; whether
    the server started."""
    import uvicorn  # noqa: PLC0415

    class DrainingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            freeze_start_up_objects()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            begin_drain(app)
            await super().shutdown(sockets)

    server = DrainingServer(uvicorn.Config(app, **options))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return bool(server.started)
