"""``strongroom push BACKUP PATH...``: a manual backup's run, its uploads and its confirm,
resumed after an interruption.

Each PATH becomes one artifact: a file as it is (named by its base name), a directory as a
tar + zstd archive (``NAME.tar.zst``, see ``archive``), ``-`` as standard input (named
``stdin`` unless told). Sizes and sha256 are computed while reading (directories and
standard input are spooled to the cache directory on the way, since ``upload-url`` needs
both before the first byte is sent).

An interrupted push leaves its state file (see ``resume``). The same command again
prepares the same inputs; when they give the same names, sizes and sha256 and the run is
still ``running``, it asks ``upload-url`` again and sends only the parts storage does not
list. Otherwise it starts a new run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Protocol
from uuid import UUID

import attrs
import httpx2

from strongroom.client.archive import DirectoryArchive
from strongroom.client.resume import (
    ItemState,
    StateFile,
    UploadState,
    cache_home,
    key_of,
    state_home,
)
from strongroom.client.uploads import (
    DEFAULT_PARALLEL,
    MultipartPlan,
    Plan,
    Prepared,
    Sender,
    copy_stream,
    hash_file,
    is_multipart,
    remove_quietly,
    spool,
)

STDIN = "-"


class RunLike(Protocol):
    """What push reads of a run."""

    @property
    def id(self) -> UUID: ...
    @property
    def state(self) -> str: ...


class BackupLike(Protocol):
    """What push reads of a backup."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def paused(self) -> bool: ...


class PushRefusedError(ValueError):
    """The backup cannot take a push's run (said before any input is read)."""


class PushApi(Protocol):
    """The API calls a push makes."""

    def get_backup(self, backup_id: str) -> BackupLike: ...
    def create_run(self, backup_id: str) -> RunLike: ...
    def get_run(self, run_id: str) -> RunLike: ...
    def upload_url(self, run_id: str, name: str, size: int, sha256: str) -> Plan: ...
    def confirm(self, run_id: str) -> RunLike: ...


class PushProgress(Protocol):
    """What a push shows while it works (rich bars in the command)."""

    def preparing(self, source: str) -> None: ...
    def start(self, name: str, size: int) -> None: ...
    def advance(self, name: str, amount: int) -> None: ...
    def finish(self, name: str) -> None: ...


class QuietProgress:
    """Shows nothing."""

    def preparing(self, source: str) -> None:
        """Nothing."""

    def start(self, name: str, size: int) -> None:
        """Nothing."""

    def advance(self, name: str, amount: int) -> None:
        """Nothing."""

    def finish(self, name: str) -> None:
        """Nothing."""


@attrs.frozen
class PushedArtifact:
    """One artifact of a push."""

    name: str
    artifact_id: str
    size: int
    sha256: str
    parts_sent: int
    parts_skipped: int


@attrs.frozen
class PushResult:
    """What a push did."""

    run_id: str
    state: str
    resumed: bool
    artifacts: list[PushedArtifact]
    warnings: list[str]


@attrs.define
class Pusher:
    """Runs pushes against one server."""

    api: PushApi
    transport: httpx2.Client
    server: str
    parallel: int = DEFAULT_PARALLEL
    progress: PushProgress = attrs.Factory(QuietProgress)
    stop: threading.Event = attrs.Factory(threading.Event)
    stdin: IO[bytes] | None = None
    stdin_name: str = "stdin"
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def push(self, backup_id: str, sources: Sequence[str]) -> PushResult:
        """Upload ``sources`` into a run of ``backup_id`` and confirm it; resume the run of
        an earlier interrupted push of the same inputs."""
        absolute = [s if s == STDIN else os.path.abspath(s) for s in sources]
        key = key_of(self.server, backup_id, *absolute)
        state_file = StateFile(state_home() / "push" / f"{key}.json")
        spool_dir = cache_home() / "push" / key
        saved = state_file.load()
        if saved is None:  # a new run: refuse a backup that cannot take one at once
            self._check_backup(backup_id)
        warnings: list[str] = []
        prepared = self._prepare(absolute, spool_dir, warnings)
        items = [
            ItemState(src, p.name, p.size, p.sha256)
            for src, p in zip(absolute, prepared, strict=True)
        ]
        state, resumed = self._run_for(state_file, saved, backup_id, items)
        pushed = []
        for ready, item in zip(prepared, state.items, strict=True):
            pushed.append(self._upload(state_file, state, ready, item))
        run = self.api.confirm(state.run_id)
        state_file.remove()
        remove_quietly(spool_dir)
        return PushResult(str(run.id), run.state, resumed, pushed, warnings)

    # ----------------------------------------------------------------------------------

    def _check_backup(self, backup_id: str) -> None:
        """What ``POST /v1/runs`` would refuse for the backup itself (unknown: the API's
        404; not manual, a draft, paused), before inputs are read and hashed; the billing
        gate is left to the server."""
        backup = self.api.get_backup(backup_id)
        if backup.kind != "manual":
            raise PushRefusedError(
                f"backup {backup.name!r} is a {backup.kind} backup: runs are started by the "
                "client only for manual backups"
            )
        if backup.state == "draft":
            raise PushRefusedError(
                f"backup {backup.name!r} is a draft until its configuration is complete; "
                f"missing: retention (strongroom backup set {backup_id} --expire-after P30D "
                "--lock-for P7D)"
            )
        if backup.paused:
            raise PushRefusedError(
                f"backup {backup.name!r} is paused: resume it first "
                f"(strongroom backup resume {backup_id})"
            )

    def _prepare(self, sources: list[str], spool_dir: Path, warnings: list[str]) -> list[Prepared]:
        taken: set[str] = set()
        prepared: list[Prepared] = []
        for source in sources:
            self.progress.preparing(source)
            if source == STDIN:
                if self.stdin is None:
                    raise ValueError("standard input is not available")
                name = _unique(self.stdin_name, taken)
                target = spool_dir / "stdin"
                size, digest = copy_stream(self.stdin, target)
            elif os.path.isdir(source):
                name = _unique(f"{os.path.basename(source) or 'root'}.tar.zst", taken)
                target = spool_dir / f"{len(prepared)}.tar.zst"
                archive = DirectoryArchive([source])
                size, digest = spool(archive, target)
                warnings.extend(str(warning) for warning in archive.warnings)
            elif os.path.isfile(source):
                name = _unique(os.path.basename(source), taken)
                target = Path(source)
                size, digest = hash_file(target)
            else:
                raise FileNotFoundError(f"{source}: no such file or directory")
            prepared.append(Prepared(target, name, size, digest))
        return prepared

    def _run_for(
        self,
        state_file: StateFile,
        saved: UploadState | None,
        backup_id: str,
        items: list[ItemState],
    ) -> tuple[UploadState, bool]:
        if (
            saved is not None
            and (saved.server, saved.backup_id) == (self.server, backup_id)
            and saved.matches(items)
            and self.api.get_run(saved.run_id).state == "running"
        ):
            return saved, True
        run = self.api.create_run(backup_id)
        state = UploadState(self.server, backup_id, str(run.id), items)
        state_file.save(state)
        return state, False

    def _upload(
        self, state_file: StateFile, state: UploadState, ready: Prepared, item: ItemState
    ) -> PushedArtifact:
        if item.done and item.artifact_id is not None:  # sent before the interruption
            self.progress.start(ready.name, ready.size)
            self.progress.advance(ready.name, ready.size)
            self.progress.finish(ready.name)
            parts = len(item.completed_parts) or 1
            return PushedArtifact(ready.name, item.artifact_id, ready.size, ready.sha256, 0, parts)

        def save() -> None:
            with self._lock:
                state_file.save(state)

        def ask() -> Plan:
            plan = self.api.upload_url(state.run_id, ready.name, ready.size, ready.sha256)
            item.artifact_id = str(plan.artifact_id)
            if is_multipart(plan):
                multipart: MultipartPlan = plan  # type: ignore[assignment]
                item.upload_id = multipart.upload_id
                item.part_size = multipart.part_size
                item.completed_parts = sorted(multipart.stored_parts)
            save()
            return plan

        def on_part(number: int) -> None:
            with self._lock:
                item.completed_parts = sorted({*item.completed_parts, number})
            save()

        advance: Callable[[int], None] = lambda amount: self.progress.advance(ready.name, amount)  # noqa: E731
        self.progress.start(ready.name, ready.size)
        sender = Sender(
            self.transport,
            parallel=self.parallel,
            on_bytes=advance,
            on_part=on_part,
            stop=self.stop,
        )
        report = sender.send(ready, ask)
        item.done = True
        save()
        self.progress.finish(ready.name)
        return PushedArtifact(
            ready.name,
            str(report.artifact_id),
            ready.size,
            ready.sha256,
            report.parts_sent,
            report.parts_skipped,
        )


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name (2)``, ``name (3)``... when an artifact of the run has it."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} ({number})"
    taken.add(candidate)
    return candidate
