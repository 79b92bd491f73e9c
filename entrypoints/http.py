"""The ASGI factory: ``uvicorn --factory strongroom.entrypoints.http:create_app``."""

from __future__ import annotations

from functools import partial

from starlette.applications import Starlette

from strongroom.adapters.http.app import build_app
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
