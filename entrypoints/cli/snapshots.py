"""``snapshots``, ``ls``, ``diff``, ``check``, ``forget``, and the snapshot sides of ``push``
and ``restore`` (composition only: the work is in ``strongroom.client``)."""

from __future__ import annotations

import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn
from uuid import UUID

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

from strongroom.client import ConflictError
from strongroom.client.packs import FetchError
from strongroom.client.prefetch import ReadAhead, check_plan, restore_plan
from strongroom.client.snapshot_push import push_snapshot
from strongroom.client.snapshot_remote import Remote, SnapshotNotFoundError, locate_snapshot
from strongroom.client.snapshot_run import MANIFEST, SnapshotOutcome, Tree, rank
from strongroom.client.snapshots import Entry, SnapshotError, SnapshotReader, diff
from strongroom.entrypoints.cli.context import (
    CommandError,
    Session,
    client_command,
    emit,
    emit_json,
    stderr_is_terminal,
)
from strongroom.entrypoints.cli.keys import identity_option, person_identity, read_identity

EXIT_API = 1


def fail(message: str) -> NoReturn:
    """Refuse the command (exit 1, the message reported in the command's style)."""
    raise CommandError(message)


class Bars:
    """One bar with bytes, files and ETA (rich, on stderr), quiet for scripts."""

    def __init__(self, session: Session, verb: str, files: int, size: int) -> None:
        console = Console(stderr=True, quiet=session.as_json or not stderr_is_terminal())
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        self.verb, self.files_total, self.files = verb, files, 0
        self.task = self.progress.add_task(self._label(), total=size or None)
        self._lock = threading.Lock()

    def _label(self) -> str:
        if self.files_total < 0:
            return self.verb
        return f"{self.verb} {self.files}/{self.files_total} files"

    def bytes(self, amount: int) -> None:
        with self._lock:
            self.progress.advance(self.task, amount)

    def file(self, _name: str) -> None:
        with self._lock:
            self.files += 1
            self.progress.update(self.task, description=self._label())


def push_into_snapshot(
    session: Session,
    remote: Remote,
    paths: tuple[str, ...],
    excludes: tuple[str, ...],
    identity_path: Path | None,
) -> None:
    """``push`` into a snapshot backup: one directory, deduplicated and encrypted."""
    identity = person_identity(identity_path, quiet=session.as_json)
    tree = Tree(os.path.abspath(paths[0]), excludes)
    files, size = tree.measure()
    bars = Bars(session, "backing up", files, size)
    sent = [0]

    def on_sent(amount: int) -> None:
        sent[0] += amount

    try:
        with bars.progress:
            outcome = push_snapshot(
                session.signed_in(),
                session.server,
                remote,
                tree,
                identity,
                on_bytes=bars.bytes,
                on_file=bars.file,
                on_sent=on_sent,
            )
    except KeyboardInterrupt:
        click.echo("interrupted: the run was failed; push again to back up", err=True)
        sys.exit(130)
    except (OSError, SnapshotError, FetchError, ValueError) as error:
        fail(str(error))
    _report_push(session, outcome)


def _report_push(session: Session, outcome: SnapshotOutcome) -> None:
    for path, reason in outcome.skipped:
        click.echo(f"warning: {path} skipped: {reason}", err=True)
    summary = {
        "run_id": outcome.run_id,
        "state": "succeeded",
        "format": "snapshot",
        "files": outcome.files,
        "files_unchanged": outcome.files_unchanged,
        "bytes_total": outcome.bytes_total,
        "bytes_read": outcome.bytes_read,
        "bytes_uploaded": outcome.bytes_uploaded,
        "packs_uploaded": outcome.packs_uploaded,
        "chunks_new": outcome.chunks_new,
        "chunks_reused": outcome.chunks_reused,
        "references": len(outcome.references),
        "skipped": [{"path": p, "reason": r} for p, r in outcome.skipped],
    }
    if session.as_json:
        emit_json(summary)
        return
    click.echo(
        f"snapshot {outcome.run_id} confirmed: {outcome.files} files "
        f"({outcome.files_unchanged} unchanged), {outcome.bytes_total} bytes; "
        f"uploaded {outcome.bytes_uploaded} bytes in {outcome.packs_uploaded} packs"
    )


def open_snapshot(
    session: Session, ref: UUID, identity_path: Path | None
) -> tuple[Remote, UUID, SnapshotReader]:
    """The snapshot SNAPSHOT (a run id or any artifact id of its run), opened."""
    client = session.signed_in()
    try:
        backup_id, run_id = locate_snapshot(client, session.workspace_id(), ref)
        remote = Remote.open(client, backup_id)
        return remote, run_id, remote.reader(run_id, read_identity(identity_path))
    except (SnapshotNotFoundError, SnapshotError, FetchError) as error:
        fail(str(error))


def _when(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _entry(entry: Entry) -> dict[str, Any]:
    return {
        "path": entry.name,
        "kind": entry.kind,
        "mode": f"{entry.mode:04o}",
        "size": entry.size,
        "mtime": _when(entry.mtime_ns),
        "target": os.fsdecode(entry.target) if entry.target is not None else None,
    }


@click.command("snapshots", help="a snapshot backup's snapshots, newest first")
@click.argument("backup_ref", metavar="BACKUP")
@client_command
def snapshots_command(session: Session, backup_ref: str) -> None:
    """The runs of BACKUP that hold a snapshot, with the bytes each stored."""
    remote = Remote.open(session.signed_in(), session.backup_id(backup_ref))
    rows: list[dict[str, Any]] = []
    for run_id, items in remote.runs().items():
        created = min(a.created_at for a in items)
        rows.append(
            {
                "id": str(run_id),
                "created_at": created,
                "artifacts": len(items),
                "bytes_new": sum(a.size for a in items),
            }
        )
    rows.sort(key=lambda row: row["created_at"], reverse=True)
    emit(session, rows, columns=["id", "created_at", "artifacts", "bytes_new"])


@click.command("ls", help="list the files of a snapshot")
@click.argument("snapshot", metavar="SNAPSHOT")
@click.argument("path", default="")
@identity_option
@client_command
def ls_command(session: Session, snapshot: str, path: str, identity_path: Path | None) -> None:
    """Entries of SNAPSHOT (a run id or any artifact id of its run) at or below PATH."""
    _, _, reader = open_snapshot(session, session.snapshot_ref(snapshot), identity_path)
    rows = [_entry(e) for e in reader.ls(path) if e.path]
    if session.as_json:
        emit_json(rows)
        return
    for row in rows:
        link = f" -> {row['target']}" if row["target"] is not None else ""
        click.echo(
            f"{row['kind']:<8} {row['mode']} {row['size']:>12} {row['mtime']}  {row['path']}{link}"
        )


@click.command("diff", help="what changed between two snapshots")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@identity_option
@client_command
def diff_command(session: Session, old: str, new: str, identity_path: Path | None) -> None:
    """Paths added, removed or modified from OLD to NEW."""
    _, _, before = open_snapshot(session, session.snapshot_ref(old), identity_path)
    _, _, after = open_snapshot(session, session.snapshot_ref(new), identity_path)
    changes = diff(before.manifest, after.manifest)
    if session.as_json:
        emit_json([{"path": c.path, "change": c.change, "fields": list(c.fields)} for c in changes])
        return
    marks = {"added": "+", "removed": "-", "modified": "M"}
    for change in changes:
        fields = f"  ({', '.join(change.fields)})" if change.fields else ""
        click.echo(f"{marks[change.change]} {change.path}{fields}")


@click.command("check", help="check a snapshot (--read-data: every byte of its packs)")
@click.argument("snapshot", metavar="SNAPSHOT")
@click.option("--read-data", is_flag=True, help="download and verify every pack it uses")
@identity_option
@client_command
def check_command(
    session: Session, snapshot: str, read_data: bool, identity_path: Path | None
) -> None:
    """Structure and pack headers of SNAPSHOT; with --read-data every chunk. Exit 1 when
    anything is damaged (the files it affects are named)."""
    ref = session.snapshot_ref(snapshot)
    remote, run_id, reader = open_snapshot(session, ref, identity_path)
    ahead = ReadAhead(reader.fetch, check_plan(reader.manifest, read_data), window=2)
    reader.fetch = ahead
    try:
        report = reader.check(read_data=read_data)
    except FetchError as error:
        fail(str(error))
    finally:
        ahead.close()
    result = {
        "run_id": str(run_id),
        "ok": report.ok,
        "packs": report.packs,
        "chunks": report.chunks,
        "problems": list(report.problems),
        "damaged_files": list(report.damaged_files),
        "bytes_downloaded": remote.bytes_downloaded,
    }
    if session.as_json:
        emit_json(result)
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        for name in report.damaged_files:
            click.echo(f"damaged: {name}")
        verdict = "ok" if report.ok else "DAMAGED"
        click.echo(f"snapshot {run_id}: {verdict} ({report.packs} packs, {report.chunks} chunks)")
    if not report.ok:
        sys.exit(EXIT_API)


@click.command("forget", help="delete a snapshot's artifacts that can be deleted")
@click.argument("snapshot", metavar="SNAPSHOT")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@client_command
def forget_command(session: Session, snapshot: str, yes: bool) -> None:
    """Delete the artifacts of SNAPSHOT's run (the manifest first); those the service keeps
    (locked, held, referenced by a live snapshot, the backup's last) are named with why."""
    client = session.signed_in()
    try:
        ref = session.snapshot_ref(snapshot)
        backup_id, run_id = locate_snapshot(client, session.workspace_id(), ref)
    except SnapshotNotFoundError as error:
        fail(str(error))
    remote = Remote.open(client, backup_id)
    items = [a for a in remote.artifacts if a.run_id == run_id]
    if not yes and not session.as_json:
        click.confirm(f"Forget snapshot {run_id} ({len(items)} artifacts)?", abort=True, err=True)
    items.sort(key=lambda a: (rank(a.name, MANIFEST) is None, a.name))
    deleted, kept = [], []
    for artifact in items:
        try:
            client.delete_artifact(artifact.id)
            deleted.append({"id": str(artifact.id), "name": artifact.name})
        except ConflictError as error:
            kept.append(
                {"id": str(artifact.id), "name": artifact.name, "code": error.code}
                | {"reason": error.message}
            )
    if session.as_json:
        emit_json({"run_id": str(run_id), "deleted": deleted, "kept": kept})
    else:
        click.echo(f"snapshot {run_id}: {len(deleted)} artifacts deleted, {len(kept)} kept")
        for item in kept:
            click.echo(f"  kept {item['name']}: {item['code']}: {item['reason']}")
    if kept:
        sys.exit(EXIT_API)


def restore_snapshot(
    session: Session,
    ref: UUID,
    target: Path,
    include: tuple[str, ...],
    identity_path: Path | None,
) -> None:
    """``restore SNAPSHOT --to DIR [--include PATH ...]``."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        fail(f"{target} is not an empty directory")
    remote, run_id, reader = open_snapshot(session, ref, identity_path)
    chosen = _chosen(reader, include)
    label = f"restoring {len(chosen)} files"
    bars = Bars(session, label, -1, sum(e.size for e in chosen))
    ahead = ReadAhead(reader.fetch, restore_plan(reader.manifest, include))
    reader.fetch = ahead
    try:
        with bars.progress:
            stats = reader.restore(target, include, on_bytes=bars.bytes)
    except (SnapshotError, FetchError, OSError) as error:
        fail(str(error))
    finally:
        ahead.close()
    result = {
        "run_id": str(run_id),
        "target": str(target),
        "files": stats.files,
        "bytes_written": stats.bytes_written,
        "bytes_downloaded": remote.bytes_downloaded,
        "requests": stats.requests,
        "xattrs_refused": stats.xattrs_refused,
    }
    if session.as_json:
        emit_json(result)
        return
    click.echo(
        f"restored {stats.files} files ({stats.bytes_written} bytes) of snapshot {run_id} "
        f"into {target}; downloaded {remote.bytes_downloaded} bytes, every chunk verified"
    )


def _chosen(reader: SnapshotReader, include: tuple[str, ...]) -> list[Entry]:
    if not include:
        return [e for e in reader.manifest.entries if e.kind == "file"]
    found: list[Entry] = []
    for path in include:
        found.extend(e for e in reader.ls(path) if e.kind == "file")
    return found


COMMANDS: tuple[click.Command, ...] = (
    snapshots_command,
    ls_command,
    diff_command,
    check_command,
    forget_command,
)
