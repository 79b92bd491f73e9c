"""Per-request cost of the fast paths, in process: no sockets, no uvicorn, no wrk.

    .venv/bin/python bench/in_process.py                      # both backends
    .venv/bin/python bench/in_process.py --backends postgres -n 3000

Each ASGI application (Strongroom on a scratch PostgreSQL database and on SQLite in a
temporary folder, and the shared peers of ``../shared/bench/peers.py``) is called directly
with a scope, a ``receive`` and a ``send``, on uvloop, by ``--concurrency`` tasks at once
(so database waits overlap as under load), in 20 batches. For each row it prints the
process CPU time per request (``time.process_time``, the figure that decides throughput on
a CPU-bound server; the least of any batch, the most stable figure on a shared machine),
the median wall time per request, and the ratio of
the peer's CPU per request to Strongroom's (higher is better, as the throughput ratios of
``fast_path.py``; the HTTP server's own cost, equal for both, is not in it, so these
ratios are upper bounds of those).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import uvloop

from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.service import open_serving_facade
from strongroom.entrypoints.settings import Settings

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _fast_setup import (  # noqa: E402
    CLIENT_ID,
    PEER_SQL,
    PEER_TOKEN,
    admin_connection,
    scratch_database,
)
from _servers import DEVICE_GRANT, LOCAL_POSTGRES, PASSWORD, database_url  # noqa: E402

ASGI = Callable[..., Any]


class Caller:
    """Calls one ASGI app directly; ``request`` returns (status, body bytes)."""

    def __init__(self, app: ASGI) -> None:
        self.app = app

    async def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: bytes = b"",
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        path, _, query = path.partition("?")
        headers = [(b"host", b"127.0.0.1"), (b"accept", b"application/json")]
        if token is not None:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        if content_type is not None:
            headers.append((b"content-type", content_type.encode()))
            headers.append((b"content-length", str(len(body)).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000),
            "state": dict(self.state),
        }
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()
            raise AssertionError

        status = 0
        chunks: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            else:
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    async def json(self, method: str, path: str, **kwargs: Any) -> Any:
        status, data = await self.request(method, path, **kwargs)
        if not 200 <= status < 300:
            raise SystemExit(f"{method} {path} answered {status}: {data!r}")
        return json.loads(data)

    async def form(self, path: str, fields: dict[str, str], token: str | None = None) -> Any:
        body = urllib.parse.urlencode(fields).encode()
        return await self.json(
            "POST",
            path,
            body=body,
            content_type="application/x-www-form-urlencoded",
            token=token,
        )

    async def start(self) -> None:
        """Runs the lifespan (its startup) in a task that lives until ``stop``."""
        self.state: dict[str, Any] = {}
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        started = asyncio.get_running_loop().create_future()
        finished = asyncio.get_running_loop().create_future()
        await self._queue.put({"type": "lifespan.startup"})

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete":
                started.set_result(None)
            elif message["type"] == "lifespan.startup.failed":
                started.set_exception(RuntimeError(message.get("message")))
            elif message["type"].startswith("lifespan.shutdown"):
                finished.set_result(None)

        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
        self._task = asyncio.ensure_future(self.app(scope, self._queue.get, send))
        self._finished = finished
        await started

    async def stop(self) -> None:
        await self._queue.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(self._finished, 30)
        await self._task


async def sign_in(client: Caller, email: str) -> str:
    await client.form("/idp/signup", {"email": email, "password": PASSWORD, "name": "Bench"})
    grant = await client.form("/idp/device/code", {"client_id": CLIENT_ID})
    approval = {"user_code": grant["user_code"], "email": email, "password": PASSWORD}
    await client.form("/idp/device", {**approval, "decision": "approve"})
    issued = await client.form(
        "/idp/token",
        {"grant_type": DEVICE_GRANT, "device_code": grant["device_code"], "client_id": CLIENT_ID},
    )
    session = await client.json("POST", "/v1/auth/sessions", token=issued["access_token"])
    return str(session["token"])


def json_body(data: Any) -> dict[str, Any]:
    return {"body": json.dumps(data).encode(), "content_type": "application/json"}


async def set_up(client: Caller, lift_quota: Callable[[str], Awaitable[None]]) -> dict[str, str]:
    """A person, a workspace, a session scoped to it, its backup quota lifted and 51
    backups (a full page of 50); the session's token, the workspace's and a backup's id."""
    session = await sign_in(client, f"bench-{uuid4().hex[:8]}@example.com")
    workspace = await client.json(
        "POST", "/v1/workspaces", token=session, **json_body({"name": "Bench"})
    )
    wid = workspace["id"]
    scoped = await client.json(
        "POST", "/v1/auth/switch", token=session, **json_body({"workspace_id": wid})
    )
    await lift_quota(wid)
    token = str(scoped["token"])
    first = None
    for number in range(51):
        backup = await client.json(
            "POST",
            f"/v1/workspaces/{wid}/backups",
            token=token,
            **json_body({"name": f"bench-{number}", "kind": "manual"}),
        )
        first = first or backup["id"]
    return {"token": token, "wid": wid, "bid": str(first)}


BATCHES = 20


async def timed(
    label: str,
    make: Callable[[int], Any],
    count: int,
    concurrency: int,
    profile: cProfile.Profile | None = None,
) -> tuple[float, float]:
    """CPU and wall µs per request: ``count`` requests, ``concurrency`` at a time, in
    ``BATCHES`` batches; the least CPU per request of any batch (what the code costs when
    the machine's other work interferes least) and the median wall time. ``profile``, if
    given, runs during the batches (not the warm-up)."""
    for number in range(min(200, count)):  # warm-up: pools, prepared statements, caches
        await make(-1 - number)
    failures: list[int] = []
    numbers = iter(range(count))
    size = max(1, count // BATCHES)
    cpus: list[float] = []
    walls: list[float] = []

    async def worker(batch: Iterator[int]) -> None:
        for number in batch:
            status, _ = await make(number)
            if not 200 <= status < 300:
                failures.append(status)

    for _ in range(BATCHES):
        batch = iter([next(numbers, -1) for _ in range(size)])
        cpu, wall = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        await asyncio.gather(*(worker(batch) for _ in range(concurrency)))
        if profile is not None:
            profile.disable()
        cpus.append((time.process_time() - cpu) / size * 1e6)
        walls.append((time.perf_counter() - wall) / size * 1e6)
    if failures:
        raise SystemExit(f"{label}: {len(failures)} non-2xx, e.g. {failures[0]}")
    return min(cpus), statistics.median(walls)


def load_peers(dsn: str, folder: Path) -> ASGI:
    os.environ["ANCHOR_DSN"] = dsn
    spec = importlib.util.spec_from_file_location("peers", folder / "peers.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no peers.py in {folder}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: ASGI = module.app
    return app


async def measure(options: argparse.Namespace) -> list[dict[str, Any]]:
    admin = options.postgres
    results: list[dict[str, Any]] = []
    with ExitStack() as stack:
        peer_db = stack.enter_context(scratch_database(admin, "inproc_peer"))
        with admin_connection(admin, peer_db) as conn:
            conn.execute(PEER_SQL)
            row = conn.execute("SELECT id FROM backups LIMIT 1").fetchone()
            assert row is not None
            peer_bid = str(row[0])
        peers = Caller(load_peers(database_url(admin, peer_db), options.peers))
        await peers.start()
        n, c = options.requests, options.concurrency
        peer_hello = await timed("hello", lambda _: peers.request("GET", "/hello"), n, c)
        peer_get = await timed(
            "peer get",
            lambda _: peers.request("GET", f"/backups/{peer_bid}", token=PEER_TOKEN),
            n,
            c,
        )
        await peers.stop()
        for backend in options.backends:
            env = {"STRONGROOM_SIGNUP": "1"}
            if options.no_background:
                env.update(
                    STRONGROOM_EXECUTORS="0",
                    STRONGROOM_HEALTH_INTERVAL="0",
                    STRONGROOM_WEBHOOK_POLL="0",
                )
            if backend == "postgres":
                db = stack.enter_context(scratch_database(admin, "inproc"))
                env["STRONGROOM_DATABASE_URL"] = database_url(admin, db)
            else:
                env["STRONGROOM_DATA_DIR"] = stack.enter_context(tempfile.TemporaryDirectory())
            settings = Settings.from_env(env)
            app = Caller(create_app(settings))
            await app.start()

            async def lift(wid: str, settings: Settings = settings) -> None:
                async with open_serving_facade(settings, migrate=False) as facade:
                    await facade.workspaces.set_quota(
                        UUID(wid), QuotaResource.BACKUPS_PER_WORKSPACE, 0
                    )

            paths = await set_up(app, lift)
            rows = row_requests(app, paths, peer_hello, peer_get)
            for key, (make, peer) in rows.items():
                if options.rows and key not in options.rows:
                    continue
                count = n if key != "list" else max(n // 4, 100)
                # CPU time, not wall time: what a request costs, not what it waits for.
                profile = cProfile.Profile(time.process_time) if options.profile else None
                cpu, wall = await timed(key, make, count, c, profile)
                if profile is not None:
                    profile.dump_stats(f"{options.profile}.{backend}.{key}.pstats")
                results.append(
                    {
                        "backend": backend,
                        "row": key,
                        "cpu_us": cpu,
                        "wall_us": wall,
                        "peer_cpu_us": peer[0],
                        "ratio": peer[0] / cpu,
                    }
                )
                print(
                    f"{backend:8} {key:8} cpu {cpu:8.1f} µs  wall {wall:8.1f} µs  "
                    f"peer cpu {peer[0]:7.1f} µs  ratio {peer[0] / cpu:5.3f}",
                    flush=True,
                )
            await app.stop()
    return results


def row_requests(
    app: Caller, paths: dict[str, str], hello: Any, peer_get: Any
) -> dict[str, tuple[Callable[[int], Any], Any]]:
    """Each row's request (a function of the request's number) and its peer's figures."""
    token, wid, bid = paths["token"], paths["wid"], paths["bid"]

    def create(_number: int) -> Any:
        body = json_body({"name": f"n-{uuid4().hex}", "kind": "manual"})
        return app.request("POST", f"/v1/workspaces/{wid}/backups", token=token, **body)

    return {
        "healthz": (lambda _: app.request("GET", "/healthz"), hello),
        "get": (lambda _: app.request("GET", f"/v1/backups/{bid}", token=token), peer_get),
        "list": (
            lambda _: app.request("GET", f"/v1/workspaces/{wid}/backups?limit=50", token=token),
            peer_get,
        ),
        "create": (create, peer_get),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["postgres", "sqlite"])
    parser.add_argument("--rows", nargs="*", default=[])
    parser.add_argument("-n", "--requests", type=int, default=2000)
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument(
        "--postgres", default=os.environ.get("STRONGROOM_BENCH_POSTGRES", LOCAL_POSTGRES)
    )
    parser.add_argument("--json")
    parser.add_argument(
        "--no-background",
        action="store_true",
        help="serve with no executor, health evaluator or webhook sender: their polls'"
        " CPU is not counted against the requests (it weighs most at low concurrency)",
    )
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="write each row's cProfile (CPU time, measured batches) to"
        " PREFIX.BACKEND.ROW.pstats (the figures printed are then the profiler's)",
    )
    parser.add_argument("--peers", type=Path, default=Path("/work/shared/bench"))
    options = parser.parse_args()
    results = uvloop.run(measure(options))
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
