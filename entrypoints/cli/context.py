"""What every client command shares: the server, credential and workspace it acts on
(flags, then ``STRONGROOM_*`` variables, then the credentials file), the SDK client, and
output as tables for people or JSON for scripts (``--json``)."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import attrs
import click

import strongroom.entrypoints.cli.config as config
from strongroom.client import Client
from strongroom.entrypoints.cli.output import (
    SIZE_COLUMNS,
    human_size,
    plain,
    table_lines,
    terminal_width,
    text,
)

R = TypeVar("R")

DEFAULT_SERVER = "http://127.0.0.1:8080"


JSON_FLAG = "strongroom.json"  # ctx.meta: the command's errors go out as JSON
REF_FORM = re.compile(r"^[0-9a-fA-F-]{4,36}$")


class CommandError(click.ClickException):
    """A refusal of the command itself (exit 1), with a code like the API's."""

    exit_code = 1

    def __init__(self, message: str, code: str = "failed") -> None:
        super().__init__(message)
        self.code = code


class NotSignedInError(CommandError):
    """No credential for this server: the user must sign in first."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "not_signed_in")


def client_command(function: Callable[..., R]) -> Callable[..., R]:
    """A client command: adds ``--server``, ``--workspace`` and ``--json`` and calls
    ``function(session, ...)`` with the ``Session`` they describe."""

    @functools.wraps(function)
    def command(
        *args: Any,
        server: str | None,
        workspace: str | None,
        as_json: bool,
        no_trunc: bool,
        **kwargs: Any,
    ) -> R:
        ctx = click.get_current_context()
        ctx.meta[JSON_FLAG] = as_json
        session = session_of(ctx, server, workspace, as_json)
        session.no_trunc = no_trunc
        return function(session, *args, **kwargs)

    decorated: Callable[..., R] = command
    for option in (
        click.option(
            "--no-trunc", is_flag=True, help="show whole ids and values in tables (no ellipsis)"
        ),
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
    no_trunc: bool = False
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
        """A workspace of the caller by id, name, or id prefix."""
        exact = _full_id(name_or_id)
        if exact is not None:
            return exact
        mine = list(self.signed_in().list_workspaces.iterate())
        return pick("workspace", name_or_id, [(w.id, w.name) for w in mine], by_name=True)

    def backup_id(self, name_or_id: str) -> UUID:
        """A backup by id, by name in the current workspace, or by id prefix."""
        exact = _full_id(name_or_id)
        if exact is not None:
            return exact
        backups = self.signed_in().list_backups.iterate(self.workspace_id(), limit=200)
        return pick("backup", name_or_id, [(b.id, b.name) for b in backups], by_name=True)

    def artifact_id(self, ref: str) -> UUID:
        """An artifact of the workspace by id or id prefix."""
        exact = _full_id(ref)
        if exact is not None:
            return exact
        return pick("artifact", ref, [(a.id, None) for a in self._artifacts()])

    def run_id(self, ref: str) -> UUID:
        """A run of the workspace by id or id prefix."""
        exact = _full_id(ref)
        if exact is not None:
            return exact
        return pick("run", ref, [(r, None) for r in self._run_ids()])

    def worker_id(self, ref: str) -> UUID:
        """A worker of the workspace by id, name, or id prefix."""
        exact = _full_id(ref)
        if exact is not None:
            return exact
        self.workspace_id()
        workers = self.signed_in().list_workers.iterate(limit=200)
        return pick("worker", ref, [(w.id, w.name) for w in workers], by_name=True)

    def api_key_id(self, ref: str) -> UUID:
        """An API key of the workspace by id, name, or id prefix."""
        exact = _full_id(ref)
        if exact is not None:
            return exact
        self.workspace_id()
        keys = self.signed_in().list_api_keys.iterate(limit=200)
        return pick("API key", ref, [(k.id, k.name) for k in keys], by_name=True)

    def snapshot_ref(self, ref: str) -> UUID:
        """A run or an artifact of the workspace by id or id prefix (a snapshot is named
        by either)."""
        exact = _full_id(ref)
        if exact is not None:
            return exact
        ids = [(r, None) for r in self._run_ids()] + [(a.id, None) for a in self._artifacts()]
        return pick("run or artifact", ref, ids)

    def _artifacts(self) -> list[Any]:
        return list(self.signed_in().list_artifacts.iterate(self.workspace_id(), limit=200))

    def _run_ids(self) -> list[UUID]:
        client = self.signed_in()
        return [
            run.id
            for backup in client.list_backups.iterate(self.workspace_id(), limit=200)
            for run in client.list_runs.iterate(backup.id, limit=200)
        ]

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
        raise CommandError(str(error), "bad_credentials_file") from error
    ctx.call_on_close(session.close)
    return session


def _full_id(ref: str) -> UUID | None:
    try:
        return UUID(ref)
    except ValueError:
        return None


def pick(
    kind: str, ref: str, known: Sequence[tuple[UUID, str | None]], by_name: bool = False
) -> UUID:
    """The one of ``known`` (id, name) that ``ref`` names: its name (case-insensitive),
    else a prefix of its id. Nothing or more than one is a refusal (exit 1); a ``ref``
    that is neither a name nor an id's form is a usage error."""
    named = [i for i, name in known if name is not None and name.casefold() == ref.casefold()]
    if len(named) == 1:
        return named[0]
    has_names = by_name or any(name is not None for _, name in known)
    if not named and not REF_FORM.match(ref):
        if has_names:
            raise CommandError(f"no {kind} named {ref!r}", "not_found")
        raise click.BadParameter(f"{ref!r} is not an id or an id prefix")
    prefixed = named or sorted({i for i, _ in known if str(i).startswith(ref.lower())})
    if len(prefixed) == 1:
        return prefixed[0]
    if not prefixed:
        said = "named or with an id starting with" if has_names else "with an id starting with"
        raise CommandError(f"no {kind} {said} {ref!r}", "not_found")
    listed = ", ".join(str(i) for i in prefixed[:5])
    raise CommandError(
        f"{ref!r} names more than one {kind} ({listed}); give more of the id", "ambiguous"
    )


# -- output ----------------------------------------------------------------------------


def emit_json(value: Any) -> None:
    """Print ``value`` as JSON on standard output."""
    click.echo(json.dumps(plain(value), indent=2, sort_keys=True, default=str))


def emit_table(rows: Iterable[Any], columns: Sequence[str], no_trunc: bool = False) -> None:
    """Print ``columns`` of ``rows`` (models or mappings) as a table that fits the terminal."""
    for line in table_lines(rows, columns, width=terminal_width(), no_trunc=no_trunc):
        click.echo(line)


def emit_record(value: Any, fields: Sequence[str] | None = None) -> None:
    """Print one model as ``field: value`` lines."""
    values = value if isinstance(value, dict) else attrs.asdict(value, recurse=False)
    width = max(len(name) for name in values)
    for name in fields or values:
        shown = values.get(name)
        line = text(shown)
        if name in SIZE_COLUMNS and isinstance(shown, int) and not isinstance(shown, bool):
            line = f"{human_size(shown)} ({shown} bytes)" if shown >= 1024 else line + " bytes"
        click.echo(f"{name.ljust(width)}  {line}")


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
        emit_table(value, columns or [], session.no_trunc)
    else:
        emit_record(value, columns)


def stderr_is_terminal() -> bool:
    """Whether progress bars have somewhere to go."""
    return sys.stderr.isatty()
