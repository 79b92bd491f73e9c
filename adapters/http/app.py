"""The Starlette application, built declaratively in one place.

The facade is opened by the lifespan (so pools and files are owned by it, never by import)
and reaches requests through ``request.state.facade``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from strongroom.adapters.http import errors
from strongroom.adapters.http.compression import GzipMiddleware
from strongroom.adapters.http.cors import CorsMiddleware
from strongroom.adapters.http.integrity_metrics import VerificationFamilies
from strongroom.adapters.http.metrics import HttpMetrics
from strongroom.adapters.http.request_ids import RequestIdMiddleware
from strongroom.adapters.http.routes import (
    artifacts,
    backups,
    claims,
    dashboard,
    docs,
    idp,
    invitations,
    machines,
    members,
    restores,
    runs,
    storage,
    system,
    workspaces,
)
from strongroom.adapters.http.routing import IndexedRouter
from strongroom.domain.errors import StrongroomError
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.blocking import unwrapped

FacadeOpener = Callable[[], AbstractAsyncContextManager[Strongroom]]

ROUTES = [
    *system.routes,
    *workspaces.routes,
    *backups.routes,
    *machines.routes,
    *members.routes,
    *invitations.routes,
    *runs.routes,
    *claims.routes,
    *artifacts.routes,
    *restores.routes,
    *storage.routes,
    *idp.routes,
    *docs.routes,
    *dashboard.routes,
]


def build_app(
    open_facade: FacadeOpener,
    *,
    environment: str = "development",
    public_url: str | None = None,
    access_log: bool = False,
    cors_origins: Iterable[str] = (),
) -> Starlette:
    """The ASGI application over the facade that ``open_facade`` yields for its lifetime;
    browsers may call it from ``cors_origins`` (none by default)."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_facade() as facade:
            integrity = VerificationFamilies(facade)
            metrics.registry.register(integrity)
            app.state.stop_waiting = facade.claims.stop_waiting
            try:
                yield {"facade": facade}
            finally:
                app.state.stop_waiting = _nothing
                metrics.registry.unregister(integrity)

    metrics = HttpMetrics()
    origins = tuple(cors_origins)
    app = Starlette(
        middleware=[
            Middleware(RequestIdMiddleware, metrics=metrics, access_log=access_log),
            *([Middleware(CorsMiddleware, origins=origins)] if origins else []),
            Middleware(GzipMiddleware),
        ],
        exception_handlers={
            StrongroomError: errors.strongroom_error,
            HTTPException: errors.http_error,
            Exception: errors.internal_error,
        },
    )
    # Starlette builds its middleware stack around ``app.router`` on the first call.
    app.router = IndexedRouter(ROUTES, lifespan=lifespan)
    app.state.metrics = metrics
    app.state.stop_waiting = _nothing
    app.state.environment = environment
    app.state.public_url = public_url
    return app


def begin_drain(app: Starlette) -> None:
    """The server has begun to stop and will wait for the requests in flight: long-polling
    claims answer now (204 when nothing is queued) instead of holding the stop for up to
    their ``wait_seconds``. Before the lifespan started or after it ended: nothing."""
    app.state.stop_waiting()


def _nothing() -> None:
    """No facade is open: no claim waits."""


def app_for(facade: Strongroom, **options: Any) -> Starlette:
    """The ASGI application over an already built facade (embedding, tests); a blocking
    view of a facade serves its async facade."""
    async_facade = unwrapped(facade)
    return build_app(lambda: nullcontext(async_facade), **options)
