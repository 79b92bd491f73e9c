"""What every client command shares: the server, credential and workspace it acts on
(flags, then ``STRONGROOM_*`` variables, then the credentials file), the SDK client, and
output as tables for people or JSON for scripts (``--json``)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import attrs
import click
from rich.console import Console
from rich.table import Table

import strongroom.entrypoints.cli.config as config
from strongroom.client import ApiError, Client
from strongroom.client.converter import converter

R = TypeVar("R")

DEFAULT_SERVER = "http://127.0.0.1:8080"


class NotSignedInError(click.ClickException):
    """No credential for this server: the user must sign in first."""

    exit_code = 1


def client_command(function: Callable[..., R]) -> Callable[..., R]:
    """A client command: adds ``--server``, ``--workspace`` and ``--json`` and calls
    ``function(session, ...)`` with the ``Session`` they describe."""

    @functools.wraps(function)
    def command(
        *args: Any, server: str | None, workspace: str | None, as_json: bool, **kwargs: Any
    ) -> R:
        session = session_of(click.get_current_context(), server, workspace, as_json)
        try:
            return function(session, *args, **kwargs)
        except ApiError as error:
            if not as_json:
                raise  # the root command prints it for people
            refusal: dict[str, Any] = {"code": error.code, "message": error.message}
            refusal |= {"request_id": error.request_id, "status": error.status}
            click.echo(json.dumps({"error": refusal}), err=True)
            raise click.exceptions.Exit(1) from error

    decorated: Callable[..., R] = command
    for option in (
        click.option(
            "--json", "as_json", is_flag=True, help="print JSON (for scripts) instead of a table"
        ),
        click.option(
            "--workspace",
            default=None,
            envvar="STRONGROOM_WORKSPACE",
            help="workspace id or name (default: the one selected with `workspace use`)",
        ),
        click.option(
            "--server",
            default=None,
            envvar="STRONGROOM_SERVER",
            help="server URL (default: the one signed in to)",
        ),
    ):
        decorated = option(decorated)
    return decorated


@attrs.define
class Session:
    """One command's view of where it talks and as whom."""

    server: str
    token: str | None
    from_file: bool  # the token is the stored session (may be replaced when switching)
    stored: config.Credentials
    workspace: str | None
    as_json: bool
    _client: Client | None = None

    @classmethod
    def of(cls, server: str | None, workspace: str | None, as_json: bool) -> Session:
        """Resolve flags, environment and the credentials file."""
        stored = config.load()
        chosen = (server or stored.server or DEFAULT_SERVER).rstrip("/")
        token = os.environ.get("STRONGROOM_TOKEN") or None
        from_file = False
        # The stored session belongs to the server it was made on; never send it elsewhere.
        if token is None and stored.token and stored.server == chosen:
            token, from_file = stored.token, True
        return cls(chosen, token, from_file, stored, workspace, as_json)

    @property
    def client(self) -> Client:
        """The SDK client (signed in when a credential is known)."""
        if self._client is None:
            self._client = Client(self.server, self.token)
        return self._client

    def signed_in(self) -> Client:
        """The SDK client; a clear error when there is no credential for this server."""
        if not self.token:
            raise NotSignedInError(f"not signed in to {self.server}: run `strongroom login`")
        return self.client

    def workspace_id(self) -> UUID:
        """The workspace to act on: ``--workspace`` (switching the stored session to it
        when needed), else the stored one, else the credential's own."""
        client = self.signed_in()
        if self.workspace:
            wanted = self.resolve_workspace(self.workspace)
            if self.from_file and self.stored.workspace_id != str(wanted):
                self.use_workspace(wanted)
            return wanted
        if self.from_file and self.stored.workspace_id:
            return UUID(self.stored.workspace_id)
        current = client.get_me().workspace_id
        if current is None:
            raise NotSignedInError(
                "no workspace selected: run `strongroom workspace use ID` (or pass --workspace)"
            )
        return current

    def use_workspace(self, workspace_id: UUID) -> None:
        """Scope the stored session to ``workspace_id`` (the old token is revoked)."""
        session = self.signed_in().switch_workspace(workspace_id)
        self.client.token = self.token = session.token
        if self.from_file or self.stored.token is None:
            self.stored.server, self.stored.token = self.server, session.token
            self.stored.workspace_id = str(workspace_id)
            config.save(self.stored)
            self.from_file = True
        if not self.as_json:
            click.echo(f"switched to workspace {workspace_id}", err=True)

    def resolve_workspace(self, name_or_id: str) -> UUID:
        """A workspace of the caller by id, or by name."""
        try:
            return UUID(name_or_id)
        except ValueError:
            pass
        matches = [
            w.id
            for w in self.signed_in().list_workspaces.iterate()
            if w.name.casefold() == name_or_id.casefold()
        ]
        if len(matches) != 1:
            found = "no" if not matches else "more than one"
            raise click.BadParameter(f"{found} workspace named {name_or_id!r}", param_hint="ID")
        return matches[0]

    def backup_id(self, name_or_id: str) -> UUID:
        """A backup by id, or by name in the current workspace."""
        try:
            return UUID(name_or_id)
        except ValueError:
            pass
        workspace_id = self.workspace_id()
        for backup in self.signed_in().list_backups.iterate(workspace_id, limit=200):
            if backup.name.casefold() == name_or_id.casefold():
                return backup.id
        raise click.BadParameter(f"no backup named {name_or_id!r}", param_hint="BACKUP")

    def close(self) -> None:
        """Close the connections."""
        if self._client is not None:
            self._client.close()


def session_of(
    ctx: click.Context, server: str | None, workspace: str | None, as_json: bool
) -> Session:
    """The command's session, closed when the command ends."""
    try:
        session = Session.of(server, workspace, as_json)
    except config.ConfigError as error:
        raise click.ClickException(str(error)) from error
    ctx.call_on_close(session.close)
    return session


# -- output ----------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data (models, UUIDs and datetimes included)."""
    return converter.unstructure(value)


def emit_json(value: Any) -> None:
    """Print ``value`` as JSON on standard output."""
    click.echo(json.dumps(plain(value), indent=2, sort_keys=True, default=str))


def text(value: Any) -> str:
    """A cell of a table."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(text(item) for item in value)
    if attrs.has(type(value)):
        return json.dumps(plain(value), sort_keys=True)
    return str(value)


def console() -> Console:
    """Standard output for people (no colour when it is not a terminal)."""
    return Console(soft_wrap=True, highlight=False)


def emit_table(rows: Iterable[Any], columns: Sequence[str], title: str | None = None) -> None:
    """Print ``columns`` of ``rows`` (models or mappings) as a table."""
    table = Table(title=title, header_style="bold", box=None, pad_edge=False)
    for column in columns:
        table.add_column(column.upper().replace("_", " "), overflow="fold")
    for row in rows:
        values = row if isinstance(row, dict) else attrs.asdict(row, recurse=False)
        table.add_row(*(text(values.get(column)) for column in columns))
    console().print(table)


def emit_record(value: Any, fields: Sequence[str] | None = None) -> None:
    """Print one model as ``field: value`` lines."""
    values = attrs.asdict(value, recurse=False)
    width = max(len(name) for name in values)
    for name in fields or values:
        click.echo(f"{name.ljust(width)}  {text(values.get(name))}")


def emit(
    session: Session,
    value: Any,
    *,
    columns: Sequence[str] | None = None,
    message: str | None = None,
) -> None:
    """Print ``value``: JSON with ``--json``; otherwise a table (a list), a message, or
    ``field: value`` lines."""
    if session.as_json:
        emit_json(value)
    elif message is not None:
        click.echo(message)
    elif isinstance(value, list):
        emit_table(value, columns or [])
    else:
        emit_record(value, columns)


def stderr_is_terminal() -> bool:
    """Whether progress bars have somewhere to go."""
    return sys.stderr.isatty()
