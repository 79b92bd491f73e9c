"""The Starlette application, built declaratively in one place.

The facade is opened by the lifespan (so pools and files are owned by it, never by import)
and reaches requests through ``request.state.facade``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from strongroom.adapters.http import errors
from strongroom.adapters.http.integrity_metrics import VerificationFamilies
from strongroom.adapters.http.layer import ErrorHandler, ErrorRendering, HttpLayer
from strongroom.adapters.http.metrics import HttpMetrics
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
from strongroom.adapters.runtime.blocking import unwrapped
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
    *restores.routes,
    *storage.routes,
    *idp.routes,
    *docs.routes,
    *dashboard.routes,
]
# One handler per error family; anything else is the layer's logged 500.
ERROR_HANDLERS: dict[type[Exception], ErrorHandler] = {
    StrongroomError: errors.strongroom_error,
    HTTPException: errors.http_error,
}


class Application(Starlette):
    """A Starlette application whose stack is one layer of ours (``HttpLayer``) around any
    middleware an embedder adds and the router: Starlette's two exception layers would
    only repeat what the layer does, at a cost every request pays. Handlers an embedder
    adds (``add_exception_handler``) are the layer's too, over ours."""

    def __init__(
        self,
        layer: Callable[[ASGIApp, Mapping[type[Exception], ErrorHandler]], HttpLayer],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._layer = layer

    def build_middleware_stack(self) -> ASGIApp:
        """``HttpLayer`` around the added middleware (``add_middleware``) and the router;
        with added middleware, the error families are rendered inside it too."""
        handlers = handlers_with(self.exception_handlers)
        # The router's own stack (``Router.__call__`` only calls it): one frame less.
        app: ASGIApp = self.router.middleware_stack
        if self.user_middleware:
            app = ErrorRendering(app, handlers)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return self._layer(app, handlers)


def handlers_with(added: Mapping[Any, ErrorHandler]) -> dict[type[Exception], ErrorHandler]:
    """``ERROR_HANDLERS`` with the handlers added as Starlette takes them: by exception
    class (``Exception`` or ``500`` the last resort), or by the status of an
    ``HTTPException``."""
    handlers = dict(ERROR_HANDLERS)
    statuses: dict[int, ErrorHandler] = {}
    for key, handler in added.items():
        if key == 500:  # Starlette's key for the last resort
            handlers[Exception] = handler
        elif isinstance(key, int):
            statuses[key] = handler
        else:
            handlers[key] = handler
    if statuses:
        handlers[HTTPException] = _by_status(statuses, handlers[HTTPException])
    return handlers


def _by_status(statuses: Mapping[int, ErrorHandler], otherwise: ErrorHandler) -> ErrorHandler:
    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return await statuses.get(exc.status_code, otherwise)(request, exc)

    return handle


def build_app(
    open_facade: FacadeOpener,
    *,
    environment: str = "development",
    public_url: str | None = None,
    access_log: bool = False,
    cors_origins: Iterable[str] = (),
    compress: bool = True,
) -> Starlette:
    """The ASGI application over the facade that ``open_facade`` yields for its lifetime;
    browsers may call it from ``cors_origins`` (none by default); answers are gzipped for
    clients that accept it unless ``compress`` is false (to measure what that costs)."""

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
    app = Application(
        lambda inner, handlers: HttpLayer(
            inner,
            metrics=metrics,
            handlers=handlers,
            access_log=access_log,
            cors_origins=origins,
            compress=compress,
        )
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
