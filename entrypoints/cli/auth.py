"""``login``, ``logout`` and ``whoami``: the device flow of RFC 8628 and the session."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import webbrowser
from typing import Any, TypeVar

import click
import httpx2

import strongroom.entrypoints.cli.config as config
from strongroom.client import (
    AccessToken,
    AuthenticationError,
    Client,
    DeviceAuthorization,
    OAuthError,
)
from strongroom.client.calls import Call
from strongroom.client.converter import converter
from strongroom.entrypoints.cli.context import CommandError, Session, client_command, emit

T = TypeVar("T")
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SLOW_DOWN_SECONDS = 5  # RFC 8628 section 3.5


def post_form(client: Client, url: str, form: dict[str, str], model: type[T]) -> T:
    """POST ``form`` to an absolute OAuth endpoint; its JSON answer as ``model``."""

    def decode(response: httpx2.Response) -> T:
        return converter.structure(response.json(), model)

    return client.perform(Call("POST", url, decode, form=form, auth=False))


def can_open_browser() -> bool:
    """A person at a terminal with a graphical browser (never a text one in the terminal)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def poll(client: Client, endpoint: str, client_id: str, device: DeviceAuthorization) -> str:
    """Poll the token endpoint until the person approves; the access token."""
    interval = max(1, device.interval)
    deadline = time.monotonic() + device.expires_in
    form = {"grant_type": DEVICE_GRANT, "device_code": device.device_code, "client_id": client_id}
    while time.monotonic() < deadline:
        time.sleep(interval)
        try:
            return post_form(client, endpoint, form, AccessToken).access_token
        except OAuthError as error:
            if error.code == "slow_down":
                interval += SLOW_DOWN_SECONDS
            elif error.code != "authorization_pending":
                raise
    raise CommandError("the code expired before it was approved; run login again")


@click.command(help="sign in with the device flow (prints a code to approve in a browser)")
@client_command
@click.option("--no-browser", is_flag=True, help="do not open a browser, only print the URL")
def login(session: Session, no_browser: bool) -> None:
    """Sign in to SERVER: show the code, open the approval page, wait, store the session."""
    anonymous = session.client
    anonymous.token = None
    settings = anonymous.get_cli_config()
    device = post_form(
        anonymous,
        settings.device_authorization_endpoint,
        {"client_id": settings.client_id},
        DeviceAuthorization,
    )
    click.echo(
        f"To sign in, open {device.verification_uri} and enter the code {device.user_code}\n"
        f"(or open {device.verification_uri_complete})",
        err=True,
    )
    if not no_browser and can_open_browser():
        webbrowser.open(device.verification_uri_complete)
    click.echo("Waiting for approval...", err=True)
    access_token = poll(anonymous, settings.token_endpoint, settings.client_id, device)
    signed = Client(session.server, access_token).create_session()
    session.stored = config.Credentials(
        server=session.server, token=signed.token, email=signed.user.email
    )
    path = config.save(session.stored)
    session.token, session.from_file = signed.token, True
    session.client.token = signed.token
    chosen = session.workspace
    # A person with no workspace yet is told to create one, not to choose one.
    next_step = "; choose a workspace with `strongroom workspace use`"
    if chosen is None:
        mine = list(session.client.list_workspaces.iterate())
        chosen = str(mine[0].id) if len(mine) == 1 else None
        if not mine:
            next_step = (
                "; you have no workspace yet: create one with"
                " `strongroom workspace create NAME --use`"
            )
    if chosen is not None:
        session.workspace = chosen
        session.workspace_id()
    result: dict[str, Any] = {
        "server": session.server,
        "email": signed.user.email,
        "workspace_id": session.stored.workspace_id,
        "credentials": str(path),
    }
    emit(
        session,
        result,
        message=f"Signed in to {session.server} as {signed.user.email}"
        + (
            f" (workspace {session.stored.workspace_id})"
            if session.stored.workspace_id
            else next_step
        ),
    )


@click.command(help="sign out: revoke the session and forget it")
@client_command
def logout(session: Session) -> None:
    """Revoke the stored session on its server and remove it from the credentials file."""
    if session.token:
        # Already revoked or expired: forgetting it is all that is left.
        with contextlib.suppress(AuthenticationError):
            session.client.delete_current_session()
    if session.from_file:
        session.stored.token = None
        session.stored.workspace_id = None
        config.save(session.stored)
    emit(session, {"server": session.server, "signed_out": True}, message="Signed out.")


@click.command(help="who the credential belongs to, its workspace and permissions")
@client_command
def whoami(session: Session) -> None:
    """The caller as the server sees it."""
    me = session.signed_in().get_me()
    if session.as_json:
        emit(session, me)
        return
    who = (
        f"{me.user.name} <{me.user.email}>" if me.user else f"{me.principal.type} {me.principal.id}"
    )
    click.echo(f"{who} on {session.server}")
    click.echo(f"workspace    {me.workspace_id or '-'}")
    click.echo(f"permissions  {', '.join(me.permissions) or '-'}")


@click.group(help="your sign-in: `auth status`")
def auth() -> None:
    """``auth status``."""


@auth.command(help="where you are signed in, as whom, and whether the server accepts it")
@client_command
def status(session: Session) -> None:
    """The server, the credential's source and owner, the workspace; exit 1 when not
    signed in or when the server refuses the credential."""
    source = "credentials file" if session.from_file else "STRONGROOM_TOKEN"
    me = session.signed_in().get_me()
    result: dict[str, Any] = {
        "server": session.server,
        "signed_in": True,
        "token_source": source,
        "credentials": str(config.credentials_path()),
        "principal": {"type": me.principal.type, "id": str(me.principal.id)},
        "email": me.user.email if me.user else None,
        "workspace_id": str(me.workspace_id) if me.workspace_id else None,
        "permissions": list(me.permissions),
    }
    who = me.user.email if me.user else f"{me.principal.type} {me.principal.id}"
    emit(
        session,
        result,
        message=(
            f"{session.server}\n  signed in as {who} (token from the {source})\n"
            f"  workspace {me.workspace_id or '-'}, {len(me.permissions)} permissions"
        ),
    )
