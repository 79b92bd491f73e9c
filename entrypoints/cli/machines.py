"""``worker list|create|show|delete`` and ``api-key list|create|revoke``: the workspace's
machine credentials. A new token is printed once, on create; the API never shows it again."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from strongroom.client import ApiKeyWithToken, WorkerWithToken
from strongroom.entrypoints.cli.context import Session, client_command, emit

WORKER_COLUMNS = ["id", "name", "created_at", "last_seen_at"]
API_KEY_COLUMNS = ["id", "name", "permissions", "created_at", "expires_at", "last_used_at"]


def _print_token(session: Session, created: WorkerWithToken | ApiKeyWithToken, what: str) -> None:
    """The new credential: JSON (token included) with ``--json``; otherwise the token alone
    on standard output, so that ``> file`` keeps only it, and the rest on standard error."""
    if session.as_json:
        emit(session, created)
        return
    click.echo(created.token)
    click.echo(
        f"created {what} {created.id} ({created.name}); the token above is shown only once",
        err=True,
    )


@click.group(help="workers: the agents that run local backups")
def worker() -> None:
    """``worker list|create|show|delete``."""


@worker.command("list", help="the workspace's workers")
@client_command
def list_workers(session: Session) -> None:
    """Every worker of the workspace."""
    session.workspace_id()
    workers = list(session.signed_in().list_workers.iterate(limit=200))
    emit(session, workers, columns=WORKER_COLUMNS)


@worker.command("create", help="a worker credential; prints its token (once) for the agent")
@client_command
@click.argument("name")
def create_worker(session: Session, name: str) -> None:
    """Create worker NAME and print its token (``strongroom agent`` reads it from a file)."""
    session.workspace_id()
    _print_token(session, session.signed_in().create_worker(name), "worker")
    if not session.as_json:
        click.echo(
            "save it in a file readable only by the agent (chmod 600) and name that file "
            "as token_file in the agent's configuration",
            err=True,
        )


@worker.command("show", help="one worker")
@client_command
@click.argument("worker_ref", metavar="WORKER")
def show_worker(session: Session, worker_ref: str) -> None:
    """A worker (by id, name or id prefix) and when it was last seen."""
    worker_id = session.worker_id(worker_ref)
    emit(session, session.signed_in().get_worker(worker_id), columns=WORKER_COLUMNS)


@worker.command("delete", help="delete a worker: its token stops working at once")
@client_command
@click.argument("worker_ref", metavar="WORKER")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def delete_worker(session: Session, worker_ref: str, yes: bool) -> None:
    """Delete (revoke) a worker, after confirmation."""
    worker_id = session.worker_id(worker_ref)
    if not yes:
        click.confirm(f"Delete worker {worker_id}?", abort=True, err=True)
    session.signed_in().delete_worker(worker_id)
    emit(session, {"deleted": worker_id}, message=f"Deleted worker {worker_id}")


@click.group("api-key", help="API keys: credentials for scripts and other programs")
def api_key() -> None:
    """``api-key list|create|revoke``."""


@api_key.command("list", help="the workspace's API keys")
@client_command
def list_api_keys(session: Session) -> None:
    """Every API key of the workspace (never their tokens)."""
    session.workspace_id()
    keys = list(session.signed_in().list_api_keys.iterate(limit=200))
    emit(session, keys, columns=API_KEY_COLUMNS)


@api_key.command("create", help="an API key holding the permissions given; prints its token once")
@client_command
@click.argument("name")
@click.option(
    "-p",
    "--permission",
    "permissions",
    multiple=True,
    required=True,
    help="a permission the key holds, e.g. backups:read (repeat; only ones you hold)",
)
@click.option(
    "--expires-at",
    type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d"]),
    default=None,
    help="when the key stops working (UTC unless an offset is given)",
)
def create_api_key(
    session: Session, name: str, permissions: tuple[str, ...], expires_at: datetime | None
) -> None:
    """Create API key NAME and print its token."""
    session.workspace_id()
    if expires_at is not None and expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)
    created = session.signed_in().create_api_key(name, list(permissions), expires_at=expires_at)
    _print_token(session, created, "API key")


@api_key.command("revoke", help="delete an API key: its token stops working at once")
@client_command
@click.argument("api_key_ref", metavar="KEY")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def revoke_api_key(session: Session, api_key_ref: str, yes: bool) -> None:
    """Revoke an API key (by id, name or id prefix), after confirmation."""
    api_key_id = session.api_key_id(api_key_ref)
    if not yes:
        click.confirm(f"Revoke API key {api_key_id}?", abort=True, err=True)
    session.signed_in().delete_api_key(api_key_id)
    emit(session, {"revoked": api_key_id}, message=f"Revoked API key {api_key_id}")


COMMANDS = (worker, api_key)
