"""``artifact list|pull|delete``; ``pull`` verifies the sha256 while it streams."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TransferSpeedColumn,
)

from strongroom.client import Artifact, Client
from strongroom.entrypoints.cli.context import (
    CommandError,
    Session,
    client_command,
    emit,
    stderr_is_terminal,
)

COLUMNS = ["id", "name", "size", "state", "backup_id", "created_at", "expires_at", "locked_until"]


@click.group(help="files stored by runs")
def artifact() -> None:
    """``artifact list|pull|delete``."""


@artifact.command("list", help="the workspace's artifacts, newest first")
@client_command
@click.option("--backup", "backup_ref", default=None, help="only this backup's (id or name)")
@click.option(
    "--state", type=click.Choice(["available", "deleted"]), default=None, help="(available)"
)
def list_(
    session: Session,
    backup_ref: str | None,
    state: str | None,
) -> None:
    """Artifacts of the workspace, optionally of one backup."""
    backup_id = session.backup_id(backup_ref) if backup_ref else None
    artifacts = [
        a
        for a in session.signed_in().list_artifacts.iterate(
            session.workspace_id(), state=state, limit=200
        )
        if backup_id is None or a.backup_id == backup_id
    ]
    emit(session, artifacts, columns=COLUMNS)


def find_artifact(session: Session, artifact_id: UUID, state: str | None = None) -> Artifact:
    """An artifact of the workspace by id (the API lists them; there is no single GET)."""
    client = session.signed_in()
    for found in client.list_artifacts.iterate(session.workspace_id(), state=state, limit=200):
        if found.id == artifact_id:
            return found
    raise CommandError(f"no artifact {artifact_id} in this workspace", "not_found")


@contextlib.contextmanager
def _progress(total: int, name: str) -> Iterator[Progress | None]:
    if not stderr_is_terminal():
        yield None
        return
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(stderr=True),
    )
    with bar:
        bar.add_task(name, total=total)
        yield bar


def pull_to(client: Client, found: Artifact, url: str, target: Path) -> str:
    """Stream ``url`` into ``target``, checking size and sha256 on the way; the file
    appears (atomically) only when both match, otherwise nothing is left behind."""
    digest = hashlib.sha256()
    size = 0
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".part"
    )
    try:
        with os.fdopen(handle, "wb") as file, _progress(found.size, found.name) as bar:
            for chunk in client.download(url):
                file.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                if bar is not None:
                    bar.advance(bar.task_ids[0], len(chunk))
        actual = digest.hexdigest()
        if size != found.size or actual != found.sha256:
            raise CommandError(
                f"{found.name}: the download does not match the artifact "
                f"(sha256 {actual}, {size} bytes; expected {found.sha256}, {found.size} bytes); "
                "nothing was written"
            )
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return actual


@artifact.command(help="download an artifact, verifying its sha256 while it streams")
@client_command
@click.argument("artifact_ref", metavar="ARTIFACT")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="file or directory to write (default: the artifact's name, here)",
)
@click.option("--force", is_flag=True, help="replace an existing file")
def pull(
    session: Session,
    artifact_ref: str,
    output: Path | None,
    force: bool,
) -> None:
    """Download ARTIFACT (an id or id prefix); the file is written only if its sha256
    matches."""
    artifact_id = session.artifact_id(artifact_ref)
    found = find_artifact(session, artifact_id)
    safe_name = Path(found.name).name or str(found.id)  # never a path out of the directory
    target = output or Path(safe_name)
    if target.is_dir():
        target = target / safe_name
    if target.exists() and not force:
        raise CommandError(f"{target} exists (use --force to replace it)", "exists")
    download = session.signed_in().request_download(artifact_id)
    sha256 = pull_to(session.signed_in(), found, download.url, target)
    emit(
        session,
        {"artifact_id": found.id, "path": str(target), "size": found.size, "sha256": sha256},
        message=f"{target}: {found.size} bytes, sha256 {sha256} verified",
    )


@artifact.command(help="delete an artifact (not inside its lock, not a backup's last)")
@client_command
@click.argument("artifact_ref", metavar="ARTIFACT")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def delete(
    session: Session,
    artifact_ref: str,
    yes: bool,
) -> None:
    """Delete an artifact (an id or id prefix), after confirmation."""
    artifact_id = session.artifact_id(artifact_ref)
    if not yes:
        click.confirm(f"Delete artifact {artifact_id}?", abort=True, err=True)
    session.signed_in().delete_artifact(artifact_id)
    emit(session, {"deleted": artifact_id}, message=f"Deleted artifact {artifact_id}")
