"""Health, readiness, the permission catalog, who-am-I, and sign-in sessions."""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from strongroom.adapters.http.openapi import READINESS_503
from strongroom.adapters.metrics.http import metrics_endpoint
from strongroom.adapters.webkit.context import ApiContext, answer
from strongroom.adapters.webkit.declare import Auth, OnePage, Routes
from strongroom.adapters.webkit.errors import UNAVAILABLE_RETRY_AFTER
from strongroom.adapters.wire.sessions import (
    CliConfig,
    Me,
    PermissionEntry,
    Session,
    SwitchWorkspace,
)
from strongroom.adapters.wire.system import Health, Readiness
from strongroom.domain.errors import StrongroomError, UnauthenticatedError
from strongroom.domain.principals import Caller
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.sessions import SIGN_OUT_REFUSAL, SWITCH_REFUSAL

# One answer for every liveness probe: a response holds no per-request state, and the
# layers that add headers to it add them to a copy.
_ALIVE = Response(b'{"status":"ok"}', media_type="application/json")


routes = Routes("Access")
system = routes.tagged("System", auth=Auth.NONE)


@system.get("/healthz", Health, "The process is running.")
async def get_health(_request: Request) -> Response:
    """Liveness

    200 while the process runs. No authentication."""
    return _ALIVE


@system.get("/readyz", Readiness, "Ready.", extra_responses=READINESS_503)
async def get_readiness(request: Request) -> Response:
    """Readiness

    200 when the database and object storage answer, otherwise 503 with the same shape.
    No authentication."""
    checks = await request.state.facade.check_ready()
    ready = all(state == "ok" for state in checks.values())
    return JSONResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status_code=200 if ready else 503,
        headers=None if ready else {"Retry-After": str(UNAVAILABLE_RETRY_AFTER)},
    )


@routes.get(
    "/v1/permissions",
    OnePage(PermissionEntry, "PermissionList", "The whole permission catalog."),
    "The catalog.",
)
async def list_permissions(facade: Strongroom, caller: Caller) -> Any:
    """The permission catalog

    Every permission slug with its description. Any credential; no workspace and no
    permission needed. Always one page."""
    catalog = [{"slug": p, "description": d} for p, d in facade.permission_catalog()]
    return {"data": catalog, "next_cursor": None}


@routes.get("/v1/me", Me, "The caller.")
async def get_me(caller: Caller) -> Caller:
    """Who am I

    The caller's principal, its workspace and its permissions. No permission needed."""
    return caller


@routes.get("/v1/auth/cli/config", CliConfig, "The configuration.", auth=Auth.NONE)
async def get_cli_config(ctx: ApiContext) -> Any:
    """Device-code sign-in configuration

    What the command-line client needs to sign a person in with the OAuth 2.0 device
    authorization grant. No authentication."""
    return ctx.facade.identity.cli_config(ctx.base_url)


@routes.action(
    "/v1/auth/sessions",
    Session,
    "The new session; its token is shown only here.",
    status=201,
    auth=Auth.IDP,
    idempotent=True,
)
async def create_session(ctx: ApiContext) -> Response:
    """Sign in

    Exchange an identity provider access token (the bearer of this request, from `POST
    /idp/token`) for a session scoped to no workspace. A provider token is exchanged once: a
    second exchange of it is 401."""
    scheme, _, token = ctx.request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthenticatedError("missing bearer credential")
    token = token.strip()
    # A repeat with the same key: the first answer, although the exchange spent the token.
    with contextlib.suppress(StrongroomError):  # a malformed key or body: refused below
        if first := await ctx.facade.sessions.replayed_exchange(token, ctx.idempotency()):
            return answer(first, 201)
    identity = await ctx.facade.sessions.verify(token)
    ctx.empty_body()
    issued = await ctx.facade.sessions.start_session(identity, ctx.idempotency(), token)
    return answer(issued, 201)


@routes.create(
    "/v1/auth/switch",
    Session,
    "The new session; its token is shown only here.",
    person=SWITCH_REFUSAL,
    body=SwitchWorkspace,
)
async def switch_workspace(ctx: ApiContext) -> Response:
    """Switch workspace

    A new session scoped to `workspace_id`; the session used for this request is revoked
    (a failed switch revokes nothing). A person's session only.

    Errors:
    - `not_found`: the caller is not a member of that workspace"""
    token = ctx.bearer().token
    # A repeat with the same key: the first answer, although the switch revoked the session.
    with contextlib.suppress(StrongroomError):  # a malformed key or body: refused below
        if first := await ctx.facade.sessions.replayed_switch(token, ctx.idempotency()):
            return answer(first, 201)
    caller = await ctx.caller()
    caller.person(SWITCH_REFUSAL)  # 403 for a machine, before the body (400)
    body = ctx.json(SwitchWorkspace)
    issued = await ctx.facade.sessions.switch(
        caller, body.workspace_id, idempotency=ctx.idempotency(), session_token=token
    )
    return answer(issued, 201)


@routes.delete("/v1/auth/sessions/current", "Signed out.", person=SIGN_OUT_REFUSAL, empty_body=True)
async def delete_current_session(facade: Strongroom, caller: Caller) -> None:
    """Sign out

    Revoke the session used for this request (and only that one). A person's session
    only; a machine credential is revoked by deleting its key or worker."""
    await facade.sessions.sign_out(caller)


system.get(
    "/metrics",
    {"text/plain": {"schema": {"type": "string"}}},
    "The Prometheus text exposition format.",
    operation_id="getMetrics",
)(metrics_endpoint)
