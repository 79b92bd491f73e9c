"""``strongroom push``, ``strongroom agent`` and ``strongroom restore``: the commands that
move backup bytes (composition only: the work is in ``strongroom.client``)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn
from uuid import UUID

import attrs
import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from strongroom.client import Client, NotFoundError
from strongroom.client.agent import Agent
from strongroom.client.agent_config import EXAMPLE_CONFIG, ConfigError, load_config
from strongroom.client.archive import ArchiveError
from strongroom.client.batches import backup_encryption
from strongroom.client.bridge import ClientApi
from strongroom.client.push import Pusher
from strongroom.client.restore import restore_from_url
from strongroom.client.snapshot_remote import Remote, backup_document
from strongroom.client.snapshot_run import is_snapshot_name
from strongroom.client.uploads import UploadCancelledError, UploadError
from strongroom.entrypoints.cli.artifacts import find_artifact
from strongroom.entrypoints.cli.context import (
    JSON_FLAG,
    CommandError,
    Session,
    client_command,
    stderr_is_terminal,
)
from strongroom.entrypoints.cli.keys import identity_option
from strongroom.entrypoints.cli.snapshots import push_into_snapshot, restore_snapshot

EXIT_API = 1
ARCHIVE_SUFFIX = ".tar.zst"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class AgentConfigError(CommandError):
    """The agent's configuration file does not hold: exit 2, as a usage error."""

    exit_code = EXIT_USAGE


def _fail(message: str) -> NoReturn:
    raise CommandError(message)


class BarProgress:
    """``PushProgress`` as rich progress bars on stderr."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()

    def preparing(self, source: str) -> None:
        """Say what is being read."""
        self._progress.console.print(f"reading {source}")

    def start(self, name: str, size: int) -> None:
        """A bar per artifact."""
        with self._lock:
            self._tasks[name] = self._progress.add_task(name, total=size)

    def advance(self, name: str, amount: int) -> None:
        """Bytes sent (or taken back when a part is sent again)."""
        with self._lock:
            self._progress.advance(self._tasks[name], amount)

    def finish(self, name: str) -> None:
        """The artifact is up."""
        with self._lock:
            task = self._tasks[name]
            self._progress.update(task, completed=self._progress.tasks[task].total)


def _bars(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


@contextmanager
def _interruptible(stop: threading.Event) -> Iterator[None]:
    """SIGTERM as Ctrl-C; either sets ``stop`` for the worker threads."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except KeyboardInterrupt:
        stop.set()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command("push", short_help="back up files or directories into a manual backup")
@click.argument("backup")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--name", "stdin_name", default="stdin", show_default=True, help="artifact name for -"
)
@click.option("--parallel", default=4, show_default=True, type=click.IntRange(1, 32))
@click.option(
    "--exclude", "excludes", multiple=True, help="glob pattern to leave out (snapshots; repeat)"
)
@identity_option
@client_command
def push_command(
    session: Session,
    backup: str,
    paths: tuple[str, ...],
    stdin_name: str,
    parallel: int,
    excludes: tuple[str, ...],
    identity_path: Path | None,
) -> None:
    """Back up PATH... into a new run of the manual backup BACKUP (id or name) and confirm it.

    One directory into a snapshot backup is a snapshot: only the chunks the backup does
    not hold yet are uploaded, encrypted to its recipients (your key opens the backup's
    earlier indexes; files unchanged since the last push from this machine are not read).

    Otherwise a file is uploaded as it is, a directory as a tar + zstd archive, - reads
    standard input. Large artifacts go in parts, several at once, with progress
    bars. An interrupted push resumes when run again with the same arguments: only the
    parts storage lacks are sent.
    """
    client = session.signed_in()
    backup_id = session.backup_id(backup)
    # One directory into a snapshot backup is a snapshot; files and - stay archives.
    one_directory = len(paths) == 1 and os.path.isdir(paths[0])
    if one_directory and backup_encryption(backup_document(client, backup_id)) is not None:
        push_into_snapshot(session, Remote.open(client, backup_id), paths, excludes, identity_path)
        return
    if excludes:
        raise click.UsageError("--exclude is for a directory pushed into a snapshot backup")
    as_json = session.as_json
    console = Console(stderr=True, quiet=as_json or not stderr_is_terminal())
    stop = threading.Event()
    # The bars are stopped (their last frame drawn) before anything else is said: a line
    # written while they are live lands in the middle of one.
    try:
        with _bars(console) as bars:
            pusher = Pusher(
                ClientApi(client),
                client.http,
                session.server,
                parallel=parallel,
                progress=BarProgress(bars),
                stop=stop,
                stdin=sys.stdin.buffer,
                stdin_name=stdin_name,
            )
            with _interruptible(stop):
                result = pusher.push(str(backup_id), list(paths))
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume the upload", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except (OSError, ArchiveError, UploadError, UploadCancelledError, ValueError) as error:
        _fail(str(error))
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(attrs.asdict(result), indent=2))
        return
    verb = "resumed and confirmed" if result.resumed else "confirmed"
    click.echo(f"run {result.run_id} {verb}: {result.state}")
    for artifact in result.artifacts:
        click.echo(
            f"  {artifact.name}  {artifact.size} bytes  sha256 {artifact.sha256}  "
            f"(parts sent {artifact.parts_sent}, already stored {artifact.parts_skipped})"
        )


def _example_epilog() -> str:
    # \b keeps click from re-wrapping each paragraph of the example.
    paragraphs = EXAMPLE_CONFIG.strip().split("\n\n")
    setup = (
        "\b\nSetup, signed in as a workspace admin:\n"
        "  strongroom worker create rack-1 > worker.token && chmod 600 worker.token\n"
        "  strongroom worker list          # the worker's id (WID)\n"
        "  strongroom backup create nightly --kind local --format archive\n"
        "  strongroom backup set nightly --worker WID --expire-after P30D --lock-for P7D\n"
        "then name worker.token as token_file and the backup's id under [[backups]]."
    )
    example = "\n\n".join(f"\b\n{p}" for p in paragraphs)
    return f"{setup}\n\nExample configuration:\n\n{example}"


@click.command("agent", epilog=_example_epilog(), short_help="run the worker agent (local backups)")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="the agent's TOML configuration file",
)
@click.option("--once", is_flag=True, help="handle what is queued now, then exit")
@click.option("--verbose", "-v", is_flag=True, help="log debugging details")
@click.option(
    "--json", "as_json", is_flag=True, help="when it stops, print {handled} (or the error) as JSON"
)
def agent_command(config_path: Path, once: bool, verbose: bool, as_json: bool) -> None:
    """Run the worker agent: claim the runs of the local backups assigned to this worker,
    archive the directories the configuration names, upload, confirm.

    SIGTERM stops it cleanly (a run in progress is left to its lease). Exit codes: 0
    stopped, 1 the server refused the token, 2 a configuration error (``bad_config``).
    """
    click.get_current_context().meta[JSON_FLAG] = as_json
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = load_config(config_path)
    except ConfigError as error:
        raise AgentConfigError(str(error), "bad_config") from error
    with Client(config.server, config.token) as client:
        agent = Agent(config, ClientApi(client), client.http)

        def on_term(signum: int, frame: FrameType | None) -> None:
            agent.terminate()

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        code = agent.run(once=once)
    if code != 0:
        if agent.refusal is not None:
            raise agent.refusal
        sys.exit(code)
    if as_json:
        click.echo(json.dumps({"handled": agent.handled}))


@click.command("restore", short_help="restore a snapshot or a directory backup")
@click.argument("ref", metavar="SNAPSHOT|ARTIFACT")
@click.option("--to", "target", required=True, type=click.Path(path_type=Path))
@click.option("--include", multiple=True, help="restore only this path of a snapshot (repeat)")
@identity_option
@client_command
def restore_command(
    session: Session,
    ref: str,
    target: Path,
    include: tuple[str, ...],
    identity_path: Path | None,
) -> None:
    """Restore a snapshot (a run id, or any artifact id of its run) or a directory archive
    (an artifact of a local or manual backup) into DIR.

    A snapshot is restored bit for bit, every chunk verified; with --include only the
    byte ranges of the chosen paths are downloaded. An archive is unpacked while it
    downloads and its sha256 checked on the way. DIR must be absent or empty.
    """
    client = session.signed_in()
    artifact = session.snapshot_ref(ref)
    if _is_snapshot(session, artifact):
        restore_snapshot(session, artifact, target, include, identity_path)
        return
    if include:
        raise click.UsageError("--include is for snapshots")
    as_json = session.as_json
    console = Console(stderr=True, quiet=as_json or not stderr_is_terminal())
    try:
        found = find_artifact(session, artifact)
        if not found.name.endswith(ARCHIVE_SUFFIX):
            _fail(
                f"artifact {found.id} ({found.name}) is not a directory archive "
                f"(*{ARCHIVE_SUFFIX}): download it with `strongroom artifact pull`, or have "
                "the service restore a cloud artifact (POST /v1/artifacts/{id}/restores)"
            )
        download = client.request_download(artifact)
        with _bars(console) as bars:
            task = bars.add_task(found.name, total=found.size)
            report = restore_from_url(
                client.http,
                download.url,
                target,
                sha256=found.sha256,
                size=found.size,
                on_bytes=lambda amount: bars.advance(task, amount),
            )
    except ArchiveError as error:
        if str(error).startswith("not a readable archive"):
            _fail(f"artifact {artifact} is not a directory archive (tar + zstd): {error}")
        _fail(str(error))
    except OSError as error:
        _fail(str(error))
    if as_json:
        click.echo(json.dumps({"target": str(target), **attrs.asdict(report)}, indent=2))
        return
    click.echo(
        f"restored {report.entries} entries ({report.files} files, {report.bytes_written} "
        f"bytes) into {target}; sha256 {report.sha256} verified"
    )


def _is_snapshot(session: Session, ref: UUID) -> bool:
    """Whether REF is a run id, or an artifact of a snapshot run."""
    client = session.signed_in()
    try:
        client.get_run(ref)
        return True
    except NotFoundError:
        pass
    return is_snapshot_name(find_artifact(session, ref).name)


COMMANDS = (push_command, agent_command, restore_command)
