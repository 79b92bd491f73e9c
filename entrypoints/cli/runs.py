"""``run list|show|wait|cancel``."""

from __future__ import annotations

import itertools
import time

import click
from rich.console import Console

from strongroom.client import Run
from strongroom.entrypoints.cli.context import (
    Session,
    client_command,
    emit,
    stderr_is_terminal,
)

COLUMNS = [
    "id",
    "state",
    "trigger",
    "created_at",
    "finished_at",
    "artifact_count",
    "bytes",
    "error",
]


@click.group(help="runs of backups")
def run() -> None:
    """``run list|show|wait|cancel``."""


@run.command("list", help="a backup's runs, newest first")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
@click.option(
    "--state",
    type=click.Choice(["queued", "running", "succeeded", "failed", "cancelled"]),
    default=None,
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
def list_(
    session: Session,
    backup_ref: str,
    state: str | None,
    limit: int,
) -> None:
    """The newest runs of a backup (by id or name)."""
    backup_id = session.backup_id(backup_ref)
    runs = session.signed_in().list_runs.iterate(backup_id, state=state, limit=min(limit, 200))
    emit(session, list(itertools.islice(runs, limit)), columns=COLUMNS)


@run.command(help="one run")
@client_command
@click.argument("run_id", type=click.UUID)
def show(session: Session, run_id: str) -> None:
    """A run's state, counts and progress."""
    emit(session, session.signed_in().get_run(run_id))


@run.command(help="wait until a run finishes; exit 0 if it succeeded, 1 otherwise")
@client_command
@click.argument("run_id", type=click.UUID)
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help="seconds (no limit)")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
def wait(
    session: Session,
    run_id: str,
    timeout: float | None,
    interval: float,
) -> None:
    """Poll the run until it is succeeded, failed or cancelled (or the timeout passes)."""
    client = session.signed_in()
    deadline = None if timeout is None else time.monotonic() + timeout
    status = Console(stderr=True).status("waiting") if stderr_is_terminal() else None
    if status is not None:
        status.start()
    try:
        current = client.get_run(run_id)
        while not current.finished:
            if deadline is not None and time.monotonic() >= deadline:
                break
            if status is not None:
                status.update(_describe(current))
            time.sleep(interval)
            current = client.get_run(run_id)
    finally:
        if status is not None:
            status.stop()
    emit(session, current, message=_describe(current))
    if current.state != "succeeded":
        if not current.finished:
            click.echo(f"strongroom: run {run_id} still {current.state} (timeout)", err=True)
        raise click.exceptions.Exit(1)


def _describe(value: Run) -> str:
    """A run's state in one line."""
    line = f"run {value.id} {value.state}"
    if value.progress is not None:
        total = f"/{value.progress.bytes_total}" if value.progress.bytes_total else ""
        line += f" ({value.progress.bytes_done}{total} bytes)"
    if value.finished:
        line += f": {value.artifact_count} artifacts, {value.bytes} bytes"
    if value.error:
        line += f": {value.error}"
    return line


@run.command(help="cancel a queued run, or ask a running one to stop")
@client_command
@click.argument("run_id", type=click.UUID)
def cancel(session: Session, run_id: str) -> None:
    """Cancel a run."""
    emit(session, session.signed_in().cancel_run(run_id))
