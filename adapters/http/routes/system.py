"""Health, readiness, the permission catalog, who-am-I, and sign-in sessions."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from strongroom.adapters.http.context import ApiContext, answer, endpoint, no_content
from strongroom.adapters.http.shapes import Me, SwitchWorkspace
from strongroom.adapters.http.wire import present
from strongroom.domain.errors import UnauthenticatedError
from strongroom.ports.driving.sessions import SIGN_OUT_REFUSAL, SWITCH_REFUSAL


async def healthz(_request: Request) -> Response:
    """Liveness: 200 while the process runs."""
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Readiness: 200 when the database and object storage answer, else 503."""
    checks = await request.state.facade.check_ready()
    ready = all(state == "ok" for state in checks.values())
    return JSONResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status_code=200 if ready else 503,
    )


@endpoint
async def permissions(ctx: ApiContext) -> Response:
    """The permission catalog; any credential, no workspace needed."""
    await ctx.caller()
    catalog = [{"slug": p, "description": d} for p, d in ctx.facade.permission_catalog()]
    return answer({"data": catalog, "next_cursor": None})


@endpoint
async def me(ctx: ApiContext) -> Response:
    """The caller's principal, workspace and permissions."""
    return answer(await ctx.caller(), 200, Me)


@endpoint
async def cli_config(ctx: ApiContext) -> Response:
    """What the CLI needs for a device-code sign-in (no authentication)."""
    config = ctx.facade.deps.identity.cli_config(ctx.base_url)
    return answer(config)


@endpoint
async def create_session(ctx: ApiContext) -> Response:
    """Exchange an identity provider access token for a session."""
    scheme, _, token = ctx.request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthenticatedError("missing bearer credential")
    identity = await ctx.facade.sessions.verify(token.strip())
    ctx.empty_body()
    with ctx.unsealing_replays():
        issued = await ctx.facade.sessions.start_session(
            identity, idempotency=ctx.sealed_idempotency(present)
        )
    return answer(issued, 201)


@endpoint
async def switch(ctx: ApiContext) -> Response:
    """A new session scoped to another workspace; the current one is revoked."""
    caller = await ctx.person(SWITCH_REFUSAL)
    body = ctx.json(SwitchWorkspace)
    with ctx.unsealing_replays():
        issued = await ctx.facade.sessions.switch(
            caller, body.workspace_id, idempotency=ctx.sealed_idempotency(present)
        )
    return answer(issued, 201)


@endpoint
async def sign_out(ctx: ApiContext) -> Response:
    """Revoke the session used for this request."""
    caller = await ctx.person(SIGN_OUT_REFUSAL)
    ctx.empty_body()
    await ctx.facade.sessions.sign_out(caller)
    return no_content()


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/v1/permissions", permissions, methods=["GET"]),
    Route("/v1/me", me, methods=["GET"]),
    Route("/v1/auth/cli/config", cli_config, methods=["GET"]),
    Route("/v1/auth/sessions", create_session, methods=["POST"]),
    Route("/v1/auth/switch", switch, methods=["POST"]),
    Route("/v1/auth/sessions/current", sign_out, methods=["DELETE"]),
]
