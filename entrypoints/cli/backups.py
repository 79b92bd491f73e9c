"""``backup list|show|create|set|pause|resume|trigger|delete``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from strongroom.adapters.wire.sources import DestinationShape as Destination
from strongroom.adapters.wire.sources import SourceShape as Source
from strongroom.client import (
    UNSET,
    Backup,
    BadRequestError,
    PostgresCredentials,
    Retention,
    S3Credentials,
    Schedule,
)
from strongroom.client.batches import Encryption
from strongroom.client.converter import converter
from strongroom.client.snapshots import RepositoryKey
from strongroom.entrypoints.cli.context import Session, client_command, emit
from strongroom.entrypoints.cli.keys import identity_option, person_identity

COLUMNS = ["id", "name", "kind", "state", "paused", "schedule", "next_run_at"]
KINDS = ["manual", "local", "cloud"]


@click.group(help="backups of the workspace")
def backup() -> None:
    """``backup list|show|create|set|pause|resume|trigger|delete``."""


@backup.command("list", help="the workspace's backups")
@client_command
def list_(session: Session) -> None:
    """Every backup of the workspace, newest first."""
    workspace_id = session.workspace_id()
    backups = list(session.signed_in().list_backups.iterate(workspace_id, limit=200))
    rows = [
        {
            "id": b.id,
            "name": b.name,
            "kind": b.kind,
            "state": b.state,
            "paused": b.paused,
            "schedule": f"{b.schedule.cron} ({b.schedule.timezone})" if b.schedule else None,
            "next_run_at": b.next_run_at,
        }
        for b in backups
    ]
    emit(session, backups if session.as_json else rows, columns=COLUMNS)


@backup.command(help="one backup's configuration")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
def show(session: Session, backup_ref: str) -> None:
    """A backup, by id or name."""
    emit(session, session.signed_in().get_backup(session.backup_id(backup_ref)))


@backup.command(help="create a backup (a draft until its configuration is complete)")
@client_command
@click.argument("name")
@click.option("--kind", type=click.Choice(KINDS), default="manual", show_default=True)
@click.option(
    "--format",
    "format_",
    type=click.Choice(["snapshot", "archive"]),
    default=None,
    help="snapshot (deduplicated, encrypted to your key; the default for manual and "
    "local) or archive (tar + zstd; cloud backups)",
)
@identity_option
def create(
    session: Session,
    name: str,
    kind: str,
    format_: str | None,
    identity_path: Path | None,
) -> None:
    """Create a backup named NAME; a manual or local one stores snapshots sealed to your
    key (made on first use) unless --format archive."""
    chosen = format_ or ("archive" if kind == "cloud" else "snapshot")
    if chosen == "snapshot" and kind == "cloud":
        raise click.UsageError("cloud backups store archives (--format archive)")
    encryption: Encryption | None = None
    sealed: dict[str, Any] = {}  # left out for an archive backup
    if chosen == "snapshot":
        identity = person_identity(identity_path, quiet=session.as_json)
        encryption = Encryption([identity.recipient])
        sealed["encryption"] = encryption
    client = session.signed_in()
    workspace_id = session.workspace_id()
    try:
        created = client.create_backup(workspace_id, name, kind, **sealed)
    except BadRequestError as error:
        # A server from before snapshots: the default falls back to an archive backup.
        if format_ == "snapshot" or "encryption" not in error.message:
            raise
        if not session.as_json:
            click.echo("warning: this server stores archives only (no snapshots)", err=True)
        created, encryption = client.create_backup(workspace_id, name, kind), None
    emit(session, created)
    if encryption is not None and kind == "local":
        click.echo(agent_lines(str(created.id), encryption.recipients), err=True)


def agent_lines(backup_id: str, recipients: Sequence[str]) -> str:
    """The ``[[backups]]`` table of a local snapshot backup, with a new repository key."""
    key = RepositoryKey.generate().to_text()
    listed = ", ".join(f'"{r}"' for r in recipients)
    return (
        "Add to the agent's configuration (the repository key is secret; keep it only "
        "there):\n\n"
        f'[[backups]]\nid = "{backup_id}"\npaths = ["/path/to/directory"]\n'
        f'repository_key = "{key}"\nrecipients = [{listed}]\n'
    )


def _json_option(value: str | None, target: Any, what: str) -> Any:
    if value is None:
        return UNSET
    try:
        return converter.structure(json.loads(value), target)
    except (ValueError, TypeError, KeyError) as error:
        raise click.BadParameter(f"not a {what}: {error}") from error


def _read_credentials() -> str:
    """Standard input to its end; at a terminal, one line typed without echo (a secret
    typed or pasted there is not left on the screen, and Enter ends it)."""
    if sys.stdin.isatty():
        typed: str = click.prompt(
            "Credentials (JSON, not shown)", hide_input=True, err=True, prompt_suffix=": "
        )
        return typed
    return sys.stdin.read()


def _credentials_from_stdin() -> S3Credentials | PostgresCredentials:
    try:
        data = json.loads(_read_credentials())
        if "access_key_id" in data:
            return S3Credentials(data["access_key_id"], data["secret_access_key"])
        return PostgresCredentials(data["username"], data["password"])
    except (ValueError, TypeError, KeyError) as error:
        raise click.BadParameter(
            'standard input must hold {"access_key_id", "secret_access_key"} or '
            '{"username", "password"}',
            param_hint="--credentials-stdin",
        ) from error


@backup.command("set", help="change a backup's configuration (only the options given)")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
@click.option("--name", default=None, help="new name")
@click.option("--schedule", "cron", default=None, help='cron line, e.g. "0 3 * * *"')
@click.option("--timezone", default=None, help="IANA timezone of the schedule (UTC)")
@click.option("--no-schedule", is_flag=True, help="remove the schedule")
@click.option("--expire-after", default=None, help="retention: ISO duration, e.g. P30D")
@click.option("--lock-for", default=None, help="retention lock: ISO duration (PT0S: none)")
@click.option("--worker", default=None, help="worker id, name or id prefix (local backups)")
@click.option("--source", default=None, help='JSON, e.g. {"type": "s3", "endpoint": ...}')
@click.option("--destination", default=None, help='JSON, e.g. {"type": "service"}')
@click.option(
    "--credentials-stdin",
    is_flag=True,
    help="read the source credentials (JSON) from stdin (at a terminal: one line, not shown)",
)
def set_(
    session: Session,
    backup_ref: str,
    name: str | None,
    cron: str | None,
    timezone: str | None,
    no_schedule: bool,
    expire_after: str | None,
    lock_for: str | None,
    worker: str | None,
    source: str | None,
    destination: str | None,
    credentials_stdin: bool,
) -> None:
    """PATCH the backup with the options given."""
    client = session.signed_in()
    backup_id = session.backup_id(backup_ref)
    if no_schedule and (cron or timezone):
        raise click.UsageError("--no-schedule goes without --schedule and --timezone")
    current: Backup | None = None
    # A half-given schedule or retention keeps the other half from the backup as it is.
    if bool(cron) != bool(timezone) or bool(expire_after) != bool(lock_for):
        current = client.get_backup(backup_id)
    schedule: Any = None if no_schedule else UNSET
    if cron or timezone:
        old = current.schedule if current else None
        cron_line = cron or (old.cron if old else None)
        if cron_line is None:
            raise click.UsageError("--timezone needs --schedule (the backup has none)")
        schedule = Schedule(cron_line, timezone or (old.timezone if old else "UTC"))
    retention: Any = UNSET
    if expire_after or lock_for:
        old_retention = current.retention if current else None
        expire = expire_after or (old_retention.expire_after if old_retention else None)
        if expire is None:
            raise click.UsageError("--lock-for needs --expire-after (the backup has none)")
        kept_lock = old_retention.lock_for if old_retention else "PT0S"
        retention = Retention(expire, lock_for or kept_lock)
    updated = client.update_backup(
        backup_id,
        name=name if name is not None else UNSET,
        schedule=schedule,
        retention=retention,
        worker_id=session.worker_id(worker) if worker is not None else UNSET,
        source=_json_option(source, Source, "source"),
        destination=_json_option(destination, Destination, "destination"),
        credentials=_credentials_from_stdin() if credentials_stdin else UNSET,
    )
    emit(session, updated)


def _action(verb: str, help_text: str) -> None:
    """Add ``backup VERB BACKUP`` calling ``{verb}_backup``."""

    @backup.command(verb, help=help_text)
    @client_command
    @click.argument("backup_ref", metavar="BACKUP")
    def command(
        session: Session,
        backup_ref: str,
    ) -> None:
        method = getattr(session.signed_in(), f"{verb}_backup")
        emit(session, method(session.backup_id(backup_ref)))


_action("pause", "pause a backup's schedule and triggers")
_action("resume", "resume a paused backup")
_action("trigger", "queue a run of the backup now (prints the run)")


@backup.command(help="delete a backup")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def delete(
    session: Session,
    backup_ref: str,
    yes: bool,
) -> None:
    """Delete a backup, after confirmation."""
    backup_id = session.backup_id(backup_ref)
    if not yes:
        click.confirm(f"Delete backup {backup_id}?", abort=True, err=True)
    session.signed_in().delete_backup(backup_id)
    emit(session, {"deleted": backup_id}, message=f"Deleted backup {backup_id}")
