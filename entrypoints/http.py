"""The ASGI factory: ``uvicorn --factory strongroom.entrypoints.http:create_app``."""

from __future__ import annotations

import contextlib
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
    )


def run_until_stopped(app: Starlette, **options: Any) -> bool:
    """``uvicorn.run(app, **options)`` (``options`` are ``uvicorn.Config``'s) whose graceful
    stop first lets long-polling claims answer, so they do not hold the drain for up to
    their ``wait_seconds``; whether the server started."""
    import uvicorn  # noqa: PLC0415

    class DrainingServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            begin_drain(app)
            await super().shutdown(sockets)

    server = DrainingServer(uvicorn.Config(app, **options))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return bool(server.started)
