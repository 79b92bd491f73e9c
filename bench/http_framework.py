"""Our router and transport layer against Starlette's, in process, in the same run.

    .venv/bin/python bench/http_framework.py -n 1000

Three builds of the same application on SQLite, each in its own temporary folder:
``ours`` (``IndexedRouter`` and the one ``HttpLayer`` doing gzip and CORS),
``starlette-router`` (Starlette's ``Router`` over the same routes) and
``starlette-middleware`` (the layer without gzip and CORS, Starlette's ``GZipMiddleware``
at 1 KiB and ``CORSMiddleware`` added instead). Each row is timed on each build in turn,
three rounds (each starting with another build); it prints the median over the rounds of
the least CPU µs per request of a batch (see ``in_process.timed``) and the ratio of
``ours`` to the variant (below 1: the variant costs more).
Every request says ``Accept-Encoding: gzip`` as httpx and browsers do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import uvloop
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Router

from strongroom.adapters.http.app import build_app
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.service import open_serving_facade
from strongroom.entrypoints.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from in_process import Caller, set_up, timed

ORIGIN = "https://console.example.com"
VARIANTS = ("ours", "starlette-router", "starlette-middleware")


class GzipCaller(Caller):
    """A caller whose every request accepts gzip."""

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        app = self.app

        async def accepting(scope: Any, receive: Any, send: Any) -> None:
            scope["headers"] = [*scope["headers"], (b"accept-encoding", b"gzip, deflate")]
            await app(scope, receive, send)

        self.app = accepting
        try:
            return await super().request(method, path, **kwargs)
        finally:
            self.app = app


def variant(name: str, settings: Settings) -> Any:
    opener = partial(open_serving_facade, settings)
    if name == "starlette-middleware":
        app = build_app(opener, compress=False)
        app.add_middleware(
            CORSMiddleware,
            allow_origins=[ORIGIN],
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "If-Match"],
            expose_headers=["ETag", "Location", "Retry-After", "X-Request-ID"],
            max_age=600,
        )
        app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=1)
        return app
    app = build_app(opener, cors_origins=(ORIGIN,))
    if name == "starlette-router":
        app.router = Router(list(app.router.routes), lifespan=app.router.lifespan_context)
    return app


async def measure(options: argparse.Namespace) -> None:
    with ExitStack() as stack:
        callers: dict[str, GzipCaller] = {}
        rows: dict[str, dict[str, Any]] = {}
        for name in VARIANTS:
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            settings = Settings.from_env({"STRONGROOM_SIGNUP": "1", "STRONGROOM_DATA_DIR": folder})
            caller = GzipCaller(variant(name, settings))
            await caller.start()

            async def lift(wid: str, settings: Settings = settings) -> None:
                async with open_serving_facade(settings, migrate=False) as facade:
                    await facade.workspaces.set_quota(
                        UUID(wid), QuotaResource.BACKUPS_PER_WORKSPACE, 0
                    )

            paths = await set_up(caller, lift)
            token, wid, bid = paths["token"], paths["wid"], paths["bid"]
            rows[name] = {
                "healthz": lambda _, c=caller: c.request("GET", "/healthz"),
                "get": lambda _, c=caller, b=bid, t=token: c.request(
                    "GET", f"/v1/backups/{b}", token=t
                ),
                "list": lambda _, c=caller, w=wid, t=token: c.request(
                    "GET", f"/v1/workspaces/{w}/backups?limit=50", token=t
                ),
            }
            callers[name] = caller
        n, c = options.requests, options.concurrency
        for row in options.rows:
            figures: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for number in range(options.rounds):
                # Each round starts with another build, so none always runs first.
                for name in VARIANTS[number % 3 :] + VARIANTS[: number % 3]:
                    count = n if row != "list" else max(n // 4, 100)
                    cpu, _wall = await timed(row, rows[name][row], count, c)
                    figures[name].append(cpu)
            ours = statistics.median(figures["ours"])
            for name in VARIANTS:
                cpu = statistics.median(figures[name])
                print(
                    f"{row:8} {name:22} cpu {cpu:8.1f} µs  ratio to ours {ours / cpu:5.3f}",
                    flush=True,
                )
        for caller in callers.values():
            await caller.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--requests", type=int, default=1000)
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", nargs="+", default=["healthz", "get", "list"])
    uvloop.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
