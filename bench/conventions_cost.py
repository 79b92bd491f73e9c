"""What the HTTP conventions of contract 13 cost per request, in process (no network).

    .venv/bin/python bench/conventions_cost.py            # about a minute
    .venv/bin/python bench/conventions_cost.py --count 50000

Calls the ASGI application directly over the in-memory facade, so the figures are the
application's own CPU time per request, without a server or a database. Each row times
two applications built the same way except for the part under test, calls alternating one
by one (A, B, A, B, ...), and reports the median call of each:

- ``gzip middleware``: the application as served, against the same built with
  ``compress=False``; for ``GET /v1/backups/{id}`` (small: never compressed) and a page of
  50 backups, each without ``Accept-Encoding`` (as ``wrk`` sends) and with ``gzip``;
- ``etag``: ``GET /v1/backups/{id}`` with its ``@tagged`` wrapper against the bare
  endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from strongroom.adapters.http.app import app_for
from strongroom.adapters.identity.builtin import CLIENT_ID
from strongroom.domain.backups import BackupKind
from strongroom.entrypoints.bootstrap import bootstrap

Scope = dict[str, Any]


async def _setup() -> tuple[Any, str, str, str]:
    facade = bootstrap()
    idp = facade.deps.identity
    await idp.add_account("ada@example.com", "correct horse battery", "Ada")
    grant = await idp.start_device_authorization(CLIENT_ID, "http://localhost")
    await idp.decide(grant.user_code, "ada@example.com", "correct horse battery", approve=True)
    idp_token = (await idp.exchange_device_code(grant.device_code, CLIENT_ID)).access_token
    ada = await facade.access.authenticate((await facade.sessions.sign_in(idp_token)).token)
    workspace = await facade.workspaces.create(ada, "Acme")
    token = (await facade.sessions.switch(ada, workspace.id)).token
    ada = await facade.access.authenticate(token)
    backup = None
    for number in range(50):
        backup = await facade.backups.create(ada, workspace.id, f"b{number}", BackupKind.MANUAL)
    assert backup is not None
    return facade, token, str(workspace.id), str(backup.id)


def _scope(path: str, query: str, token: str, gzip: bool) -> Scope:
    headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode())]
    if gzip:
        headers.append((b"accept-encoding", b"gzip, deflate"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }


async def _call(app: Any, scope: Scope, facade: Any) -> int:
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app({**scope, "state": {"facade": facade}}, receive, send)
    return status


async def _timed(app: Any, scope: Scope, facade: Any) -> int:
    started = time.perf_counter_ns()
    assert await _call(app, scope, facade) == 200
    return time.perf_counter_ns() - started


async def _compare(label: str, a: Any, b: Any, scope: Scope, facade: Any, count: int) -> None:
    """Calls of A and B alternate one by one, so that a busy machine slows both alike; the
    medians of the single calls shrug off the calls a preemption hit."""
    for _ in range(count // 10):
        await _timed(a, scope, facade)
        await _timed(b, scope, facade)
    times_a, times_b = [], []
    for _ in range(count):
        times_a.append(await _timed(a, scope, facade))
        times_b.append(await _timed(b, scope, facade))
    median_a, median_b = statistics.median(times_a), statistics.median(times_b)
    print(
        f"{label:58s} A {median_a / 1e3:8.1f} us  B {median_b / 1e3:8.1f} us  "
        f"B-A {(median_b - median_a) / 1e3:+6.1f} us  B/A {median_b / median_a:.3f}"
    )


def _without_gzip(facade: Any) -> Starlette:
    return app_for(facade, compress=False)


def _untagged(facade: Any) -> Starlette:
    app = app_for(facade)
    routes = app.router.routes
    (index,) = [
        i
        for i, r in enumerate(routes)
        if getattr(r, "path", None) == "/v1/backups/{bid}" and "GET" in (r.methods or ())  # type: ignore[attr-defined]
    ]
    tagged_endpoint = routes[index].endpoint  # type: ignore[attr-defined]
    bare: Callable[..., Any] = tagged_endpoint.__wrapped__  # the route without @tagged
    routes[index] = Route("/v1/backups/{bid}", bare, methods=["GET"])  # same place: same match
    return app


async def main(count: int) -> None:
    facade, token, workspace_id, backup_id = await _setup()
    served = app_for(facade)
    one = f"/v1/backups/{backup_id}"
    page = f"/v1/workspaces/{workspace_id}/backups"
    plain = _without_gzip(facade)
    print("A: without the part under test, B: with it (as served)")
    for gzip in (False, True):
        accept = "gzip" if gzip else "none"
        await _compare(
            f"gzip middleware, GET {{id}}, Accept-Encoding {accept}",
            plain,
            served,
            _scope(one, "", token, gzip),
            facade,
            count,
        )
        await _compare(
            f"gzip middleware, GET list of 50, Accept-Encoding {accept}",
            plain,
            served,
            _scope(page, "limit=50", token, gzip),
            facade,
            count // 5,
        )
    await _compare(
        "etag, GET {id}",
        _untagged(facade),
        served,
        _scope(one, "", token, False),
        facade,
        count,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="calls of each application")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.count))
