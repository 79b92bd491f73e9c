"""``run list|show|wait|watch|cancel``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn

from strongroom.client import Run
from strongroom.entrypoints.cli.context import (
    Session,
    client_command,
    emit,
    stderr_is_terminal,
)
from strongroom.entrypoints.cli.output import human_size

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
    """``run list|show|wait|watch|cancel``."""


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
    """The newest runs of a backup (by id, id prefix or name)."""
    backup_id = session.backup_id(backup_ref)
    runs = session.signed_in().list_runs.iterate(backup_id, state=state, limit=min(limit, 200))
    emit(session, list(itertools.islice(runs, limit)), columns=COLUMNS)


@run.command(help="one run")
@client_command
@click.argument("run_ref", metavar="RUN")
def show(session: Session, run_ref: str) -> None:
    """A run's state, counts and progress (RUN: an id or id prefix)."""
    emit(session, session.signed_in().get_run(session.run_id(run_ref)))


@run.command(help="wait until a run finishes; exit 0 if it succeeded, 1 otherwise")
@client_command
@click.argument("run_ref", metavar="RUN")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help="seconds (no limit)")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
def wait(
    session: Session,
    run_ref: str,
    timeout: float | None,
    interval: float,
) -> None:
    """Poll the run until it is succeeded, failed or cancelled (or the timeout passes)."""
    client = session.signed_in()
    run_id = session.run_id(run_ref)
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
                status.update(describe(current))
            time.sleep(interval)
            current = client.get_run(run_id)
    finally:
        if status is not None:
            status.stop()
    emit(session, current, message=describe(current))
    if current.state != "succeeded":
        if not current.finished:
            click.echo(f"strongroom: error: run {run_id} still {current.state} (timeout)", err=True)
        raise click.exceptions.Exit(1)


@contextmanager
def _live_bar(session: Session) -> Iterator[tuple[Progress, TaskID] | None]:
    """A progress bar on standard error at a terminal; nothing otherwise."""
    if not stderr_is_terminal():
        yield None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        yield bar, bar.add_task("queued", total=None)


@run.command(help="follow a run's progress until it ends; exit 0 if it succeeded, 1 otherwise")
@client_command
@click.argument("run_ref", metavar="RUN")
@click.option("--interval", type=click.FloatRange(min=0.1), default=1.0, show_default=True)
def watch(session: Session, run_ref: str, interval: float) -> None:
    """A live bar at a terminal (a line per change on standard error otherwise), then
    the run as ``run show`` prints it."""
    client = session.signed_in()
    run_id = session.run_id(run_ref)
    said = ""
    with _live_bar(session) as live:
        current = client.get_run(run_id)
        while True:
            line = describe(current)
            if live is not None:
                bar, task = live
                done = current.progress.bytes_done if current.progress else 0
                total = current.progress.bytes_total if current.progress else None
                bar.update(task, description=_phase(current), completed=done, total=total)
            elif line != said and not session.as_json:
                click.echo(line, err=True)
            said = line
            if current.finished:
                break
            time.sleep(interval)
            current = client.get_run(run_id)
    emit(session, current, message=describe(current))
    if current.state != "succeeded":
        raise click.exceptions.Exit(1)


def _phase(value: Run) -> str:
    """The run's state and what its holder says it is doing."""
    message = value.progress.message if value.progress else None
    return f"{value.state}: {message}" if message else str(value.state)


def describe(value: Run) -> str:
    """A run's state in one line."""
    line = f"run {value.id} {value.state}"
    progress = value.progress
    if progress is not None and not value.finished:
        total = f" of {human_size(progress.bytes_total)}" if progress.bytes_total else ""
        line += f" ({human_size(progress.bytes_done)}{total}"
        line += f", {progress.message})" if progress.message else ")"
    if value.finished:
        line += f": {value.artifact_count} artifacts, {human_size(value.bytes)}"
    if value.error:
        line += f": {value.error}"
    return line


@run.command(help="cancel a queued run, or ask a running one to stop")
@client_command
@click.argument("run_ref", metavar="RUN")
def cancel(session: Session, run_ref: str) -> None:
    """Cancel a run (an id or id prefix)."""
    emit(session, session.signed_in().cancel_run(session.run_id(run_ref)))
