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

from strongroom.adapters.dashboard import routes as dashboard
from strongroom.adapters.http import (
    bindings,  # noqa: F401 (binds the answers of classes outside the domain to their shapes)
    openapi,
)
from strongroom.adapters.http.routes import (
    artifacts,
    backups,
    claims,
    docs,
    drills,
    health,
    invitations,
    machines,
    members,
    proofs,
    restores,
    retention,
    runs,
    system,
    webhooks,
    workspaces,
)
from strongroom.adapters.identity.web import routes as idp
from strongroom.adapters.metrics.http import HttpMetrics
from strongroom.adapters.metrics.integrity import VerificationFamilies
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.adapters.storage import local_routes as storage
from strongroom.adapters.webkit import errors
from strongroom.adapters.webkit.application import Application
from strongroom.adapters.webkit.declare import Json, Operation
from strongroom.adapters.webkit.layer import ErrorHandler, HttpLayer
from strongroom.adapters.webkit.routing import IndexedRouter
from strongroom.domain.errors import StrongroomError
from strongroom.ports.driving import Strongroom

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
    *retention.routes,
    *restores.routes,
    *health.routes,
    *webhooks.routes,
    *drills.routes,
    *proofs.routes,
    *storage.routes,
    *idp.routes,
    *docs.routes,
    *dashboard.routes,
]


def operations() -> list[Operation]:
    """Every documented operation of the application's route table."""
    return openapi.operations(ROUTES)


def document(server_url: str | None = None) -> Json:
    """The OpenAPI document of the application's route table (``document_for`` caches an
    application's own)."""
    return openapi.build_document(ROUTES, server_url)


# One handler per error family; anything else is the layer's logged 500.
ERROR_HANDLERS: dict[type[Exception], ErrorHandler] = {
    StrongroomError: errors.strongroom_error,
    HTTPException: errors.http_error,
}


def build_app(
    open_facade: FacadeOpener,
    *,
    environment: str = "development",
    public_url: str | None = None,
    access_log: bool = False,
    cors_origins: Iterable[str] = (),
    compress: bool = True,
    metrics_token: str | None = None,
) -> Starlette:
    """The ASGI application over the facade that ``open_facade`` yields for its lifetime;
    browsers may call it from ``cors_origins`` (none by default); answers are gzipped for
    clients that accept it unless ``compress`` is false (to measure what that costs);
    ``/metrics`` asks for ``metrics_token`` as a bearer when one is given."""

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

    metrics = HttpMetrics(metrics_token)
    origins = tuple(cors_origins)
    app = Application(
        lambda inner, handlers: HttpLayer(
            inner,
            metrics=metrics,
            handlers=handlers,
            access_log=access_log,
            cors_origins=origins,
            compress=compress,
        ),
        ERROR_HANDLERS,
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
