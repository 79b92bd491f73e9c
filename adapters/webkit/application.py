"""The Starlette application of the kit: one ``HttpLayer`` around any middleware an
embedder adds and the router, with the error families' handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from strongroom.adapters.webkit.layer import ErrorHandler, ErrorRendering, HttpLayer


class Application(Starlette):
    """A Starlette application whose stack is one layer of ours (``HttpLayer``) around any
    middleware an embedder adds and the router: Starlette's two exception layers would
    only repeat what the layer does, at a cost every request pays. ``handlers`` render the
    error families; those an embedder adds (``add_exception_handler``) are the layer's
    too, over them."""

    def __init__(
        self,
        layer: Callable[[ASGIApp, Mapping[type[Exception], ErrorHandler]], HttpLayer],
        handlers: Mapping[type[Exception], ErrorHandler],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._layer = layer
        self._handlers = dict(handlers)

    def build_middleware_stack(self) -> ASGIApp:
        """``HttpLayer`` around the added middleware (``add_middleware``) and the router;
        with added middleware, the error families are rendered inside it too."""
        handlers = handlers_with(self._handlers, self.exception_handlers)
        # The router's own stack (``Router.__call__`` only calls it): one frame less.
        app: ASGIApp = self.router.middleware_stack
        if self.user_middleware:
            app = ErrorRendering(app, handlers)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return self._layer(app, handlers)


def handlers_with(
    base: Mapping[type[Exception], ErrorHandler], added: Mapping[Any, ErrorHandler]
) -> dict[type[Exception], ErrorHandler]:
    """``base`` with the handlers added as Starlette takes them: by exception class
    (``Exception`` or ``500`` the last resort), or by the status of an ``HTTPException``
    (over ``base``'s handler of ``HTTPException``)."""
    handlers = dict(base)
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
