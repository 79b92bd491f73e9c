"""Routes of the docs area (being filled in)."""

from __future__ import annotations

from starlette.routing import BaseRoute

routes: list[BaseRoute] = []
