"""The worker agent (contract 12): claims the runs of the local backups assigned to its
worker, archives the directories its configuration names for each, uploads the archive,
heartbeats progress, and confirms or fails the run.

- Claims long-poll ``POST /v1/claims`` (``wait_seconds``); with ``once``, what is queued
  now is handled and the agent exits.
- A run's archive is spooled to the state directory (keyed by the run) while its size and
  sha256 are computed, then uploaded (multipart parts in parallel). The spool and a resume
  state stay until the run is confirmed: when the agent dies mid-upload, the lease expires,
  the run is queued again (``attempt + 1``), and the next claim of the same run announces
  the same archive and sends what storage lacks.
- A heartbeat every ``heartbeat_seconds`` (15 s) extends the lease and reports progress; a
  heartbeat answering ``cancel_requested`` (the run is then cancelled) or refused (404 or
  409: the run is no longer this worker's) stops the work.
- SIGTERM (``stop``) ends the work at the next chunk without failing the run: the run is
  left to its lease, and another claim takes it later.
- A token the server refuses (401, 403) is fatal: the agent says so and exits 1. An
  unreachable server is retried with exponential backoff up to a minute.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol
from uuid import UUID

import attrs
import httpx2

from strongroom.adapters.wire.artifacts import UploadRequest
from strongroom.client.agent_config import AgentConfig, SnapshotSettings
from strongroom.client.agent_snapshots import AgentSnapshotState
from strongroom.client.archive import ArchiveError, DirectoryArchive
from strongroom.client.errors import (
    ApiError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from strongroom.client.resume import (
    ItemState,
    StateFile,
    UploadState,
    cache_home,
    state_home,
)
from strongroom.client.snapshot_run import Keys, Tree, run_snapshot
from strongroom.client.snapshots import SnapshotError
from strongroom.client.uploads import (
    MultipartPlan,
    Plan,
    Prepared,
    Sender,
    UploadCancelledError,
    UploadError,
    is_multipart,
    remove_quietly,
    spool,
)

logger = logging.getLogger("strongroom.agent")

EXIT_OK = 0
EXIT_REFUSED = 1
MAX_BACKOFF = 60.0
MAX_ERROR = 2000


class ClaimedRun(Protocol):
    """What the agent reads of a claimed run."""

    @property
    def id(self) -> UUID: ...
    @property
    def attempt(self) -> int: ...


class ClaimedBackup(Protocol):
    """What the agent reads of a claimed run's backup."""

    @property
    def id(self) -> UUID: ...
    @property
    def name(self) -> str: ...


class ClaimLike(Protocol):
    """``POST /v1/claims``'s answer."""

    @property
    def run(self) -> ClaimedRun: ...
    @property
    def backup(self) -> ClaimedBackup: ...


class HeartbeatLike(Protocol):
    """``POST /v1/runs/{id}/heartbeat``'s answer."""

    @property
    def cancel_requested(self) -> bool: ...


class AgentApi(Protocol):
    """The API calls the agent makes (its token is a worker credential)."""

    def claim(self, wait_seconds: int) -> ClaimLike | None: ...
    def heartbeat(
        self, run_id: str, bytes_done: int, bytes_total: int | None, message: str | None
    ) -> HeartbeatLike: ...
    def fail(self, run_id: str, error: str) -> object: ...
    def upload_url(self, run_id: str, name: str, size: int, sha256: str) -> Plan: ...
    def confirm(self, run_id: str) -> object: ...
    def upload_urls(self, run_id: str, items: Sequence[UploadRequest]) -> list[Plan]: ...
    def confirm_snapshot(self, run_id: str, references: Sequence[str]) -> object: ...


class _StoppedError(Exception):
    """The work of a run stopped (cancel, lost lease or SIGTERM)."""


class _InterruptedWhileIdle(BaseException):
    """SIGTERM during a claim's long poll: raised from the signal handler to end it."""


@attrs.define
class JobProgress:
    """What a heartbeat reports; updated by the worker, read by the heartbeat thread."""

    bytes_done: int = 0
    bytes_total: int | None = None
    message: str = "starting"
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def phase(self, message: str, total: int | None) -> None:
        """A new phase (archiving, uploading): its total, done reset to 0."""
        with self._lock:
            self.message, self.bytes_total, self.bytes_done = message, total, 0

    def add(self, amount: int) -> None:
        """Bytes done (negative when a part is sent again)."""
        with self._lock:
            self.bytes_done = max(0, self.bytes_done + amount)

    def read(self) -> tuple[int, int | None, str]:
        """The current values."""
        with self._lock:
            return self.bytes_done, self.bytes_total, self.message


class Heartbeat:
    """Heartbeats one run every ``interval`` seconds on a thread until ``close``; sets
    ``stop`` when the run was cancelled or is no longer this worker's."""

    def __init__(self, api: AgentApi, run_id: str, interval: float, progress: JobProgress) -> None:
        self._api = api
        self._run_id = run_id
        self._interval = interval
        self._progress = progress
        self._closed = threading.Event()
        self.stop = threading.Event()
        self.cancelled = False
        self.lost = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{run_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._closed.set()
        self._thread.join(timeout=30)

    def _beat(self) -> None:
        while not self._closed.wait(self._interval):
            if not self.beat_now():
                return

    def beat_now(self) -> bool:
        """One heartbeat now; whether the work may go on (not cancelled, still ours)."""
        done, total, message = self._progress.read()
        with self._lock:
            if self.stop.is_set():
                return False
            try:
                answer = self._api.heartbeat(self._run_id, done, total, message)
            except (NotFoundError, ConflictError) as error:
                logger.warning("run %s is no longer ours (%s): stopping it", self._run_id, error)
                self.lost = True
                self.stop.set()
                return False
            except ApiError as error:  # unreachable for now: the lease gives time
                logger.warning("heartbeat of run %s failed: %s", self._run_id, error)
                return True
            if answer.cancel_requested:
                logger.info("run %s: cancel requested", self._run_id)
                self.cancelled = True
                self.stop.set()
                return False
            return True


class Agent:
    """The agent's loop; ``stop`` (set by SIGTERM) ends it cleanly."""

    def __init__(
        self,
        config: AgentConfig,
        api: AgentApi,
        transport: httpx2.Client,
        stop: threading.Event | None = None,
    ) -> None:
        self._config = config
        self._api = api
        self._transport = transport
        self.stop = stop or threading.Event()
        self.handled = 0
        self.refusal: ApiError | None = None  # why ``run`` returned EXIT_REFUSED
        self._idle = False
        base = config.state_dir
        self._state_dir = (base / "state") if base else state_home() / "agent"
        self._spool_dir = (base / "spool") if base else cache_home() / "agent"

    def run(self, once: bool = False) -> int:
        """Claim and handle runs until stopped (or, with ``once``, until none is queued);
        the process's exit code."""
        failures = 0
        logger.info(
            "agent started: claiming runs of %d backups from %s",
            len(self._config.backups),
            self._config.server,
        )
        while not self.stop.is_set():
            try:
                self._idle = True
                try:
                    claim = self._api.claim(0 if once else self._config.wait_seconds)
                finally:
                    self._idle = False
            except _InterruptedWhileIdle:
                break
            except (AuthenticationError, PermissionDeniedError) as error:
                logger.error(
                    "the server refused this agent's token (%s: %s, request %s): check "
                    "`token` or `token_file`; the worker may have been deleted or its "
                    "token rotated",
                    error.code,
                    error.message,
                    error.request_id,
                )
                self.refusal = error
                return EXIT_REFUSED
            except ApiError as error:
                if once:
                    logger.error("claim failed: %s", error)
                    self.refusal = error
                    return EXIT_REFUSED
                failures += 1
                delay = min(MAX_BACKOFF, 2.0 ** min(failures, 6))
                logger.warning("claim failed (%s); trying again in %.0f s", error, delay)
                self.stop.wait(delay)
                continue
            failures = 0
            if claim is None:
                if once:
                    if self.handled:
                        logger.info("nothing more queued: %d runs handled", self.handled)
                    else:
                        logger.info("nothing queued")
                    return EXIT_OK
                continue
            self.handle(claim)
            self.handled += 1
        logger.info("stopped")
        return EXIT_OK

    def terminate(self) -> None:
        """Stop cleanly (SIGTERM's handler, on the main thread): a claim's long poll ends
        at once; a run's work ends at its next chunk, the run left to its lease."""
        self.stop.set()
        if self._idle:
            self._idle = False
            raise _InterruptedWhileIdle

    def handle(self, claim: ClaimLike) -> None:
        """Archive, upload and confirm one claimed run; fail it with the reason when that
        cannot be done."""
        run_id, backup_id = str(claim.run.id), claim.backup.id
        paths = self._config.backups.get(backup_id)
        logger.info("run %s of backup %s (attempt %s)", run_id, backup_id, claim.run.attempt)
        if paths is None:
            self._fail(run_id, f"this agent's configuration names no paths for backup {backup_id}")
            return
        progress = JobProgress()
        with Heartbeat(self._api, run_id, self._config.heartbeat_seconds, progress) as beat:
            stop = _either(self.stop, beat.stop)
            try:
                settings = self._config.snapshots.get(backup_id)
                if settings is not None:
                    self._snapshot(run_id, backup_id, paths[0], settings, progress, stop, beat)
                else:
                    self._work(run_id, claim.backup.name, paths, progress, stop, beat)
            except (UploadCancelledError, _StoppedError):
                if beat.cancelled:
                    self._fail(run_id, "cancelled on request")
                    self._forget(run_id)
                elif beat.lost:
                    self._forget(run_id)
                else:
                    logger.info("run %s left to its lease (the agent is stopping)", run_id)
            except ApiError as error:
                self._fail(run_id, f"{error.code}: {error.message}")
            except (ArchiveError, UploadError, OSError, SnapshotError) as error:
                self._fail(run_id, str(error))
            finally:
                stop.set()

    # ----------------------------------------------------------------------------------

    def _work(
        self,
        run_id: str,
        backup_name: str,
        paths: tuple[Path, ...],
        progress: JobProgress,
        stop: threading.Event,
        beat: Heartbeat,
    ) -> None:
        state_file = StateFile(self._state_dir / f"{run_id}.json")
        prepared = self._archive(run_id, backup_name, paths, state_file, progress, stop)
        state = state_file.load()
        assert state is not None
        item = state.items[0]
        progress.phase("uploading", prepared.size)

        def ask() -> Plan:
            plan = self._api.upload_url(run_id, prepared.name, prepared.size, prepared.sha256)
            item.artifact_id = str(plan.artifact_id)
            if is_multipart(plan):
                multipart: MultipartPlan = plan  # type: ignore[assignment]
                item.upload_id, item.part_size = multipart.upload_id, multipart.part_size
                item.completed_parts = sorted(multipart.stored_parts)
            state_file.save(state)
            return plan

        sender = Sender(
            self._transport, parallel=self._config.parallel, on_bytes=progress.add, stop=stop
        )
        report = sender.send(prepared, ask)
        logger.info(
            "run %s: %s uploaded (%d parts sent, %d already stored)",
            run_id,
            prepared.name,
            report.parts_sent,
            report.parts_skipped,
        )
        # A last heartbeat before confirming: a cancel asked for during the upload wins.
        progress.phase("confirming", prepared.size)
        progress.add(prepared.size)
        if stop.is_set() or not beat.beat_now():
            raise _StoppedError
        self._api.confirm(run_id)
        logger.info("run %s succeeded", run_id)
        self._forget(run_id)

    def _snapshot(
        self,
        run_id: str,
        backup_id: UUID,
        root: Path,
        settings: SnapshotSettings,
        progress: JobProgress,
        stop: threading.Event,
        beat: Heartbeat,
    ) -> None:
        """A snapshot run: only chunks this agent has not stored are uploaded."""
        state = AgentSnapshotState(self._state_dir / "snapshots" / str(backup_id))
        key = settings.repository_key
        keys = Keys(key, settings.recipients, key.seal(settings.recipients))
        tree = Tree(str(root), settings.excludes)
        progress.phase("snapshot", tree.measure()[1])
        outcome = run_snapshot(
            self._api,
            self._transport,
            run_id,
            tree,
            keys,
            state.catalog(key),
            state.packs(),
            state.cache(),
            stop=stop,
            on_bytes=progress.add,
            before_confirm=lambda: self._still_ours(stop, beat),
        )
        state.keep(outcome)
        for path, reason in outcome.skipped:
            logger.warning("run %s: %s skipped: %s", run_id, path, reason)
        logger.info(
            "run %s succeeded: %d files (%d unchanged), %d bytes uploaded in %d packs",
            run_id,
            outcome.files,
            outcome.files_unchanged,
            outcome.bytes_uploaded,
            outcome.packs_uploaded,
        )

    @staticmethod
    def _still_ours(stop: threading.Event, beat: Heartbeat) -> None:
        """A last heartbeat before confirming: a cancel asked for during the upload wins."""
        if stop.is_set() or not beat.beat_now():
            raise _StoppedError

    def _archive(
        self,
        run_id: str,
        backup_name: str,
        paths: tuple[Path, ...],
        state_file: StateFile,
        progress: JobProgress,
        stop: threading.Event,
    ) -> Prepared:
        """The run's archive: the one spooled by an earlier attempt, or a new one."""
        target = self._spool_dir / f"{run_id}.tar.zst"
        saved = state_file.load()
        if saved is not None and target.is_file() and target.stat().st_size == saved.items[0].size:
            item = saved.items[0]
            logger.info("run %s: resuming with the archive of an earlier attempt", run_id)
            return Prepared(target, item.name, item.size, item.sha256)
        progress.phase("archiving", None)
        archive = DirectoryArchive(list(paths))

        def chunks() -> Iterator[bytes]:
            for chunk in archive:
                if stop.is_set():
                    raise _StoppedError
                progress.add(archive.bytes_read - progress.read()[0])
                yield chunk

        size, digest = spool(chunks(), target)
        for warning in archive.warnings:
            logger.warning("run %s: %s", run_id, warning)
        name = f"{_safe(backup_name)}-{run_id[:8]}.tar.zst"
        state_file.save(
            UploadState(
                self._config.server, "", run_id, [ItemState(str(target), name, size, digest)]
            )
        )
        return Prepared(target, name, size, digest)

    def _fail(self, run_id: str, error: str) -> None:
        logger.error("run %s failed: %s", run_id, error)
        try:
            self._api.fail(run_id, error[:MAX_ERROR] or "failed")
        except (NotFoundError, ConflictError):
            pass  # already finished (cancelled by the heartbeat) or no longer ours
        except ApiError as failure:
            logger.error("could not report the failure of run %s: %s", run_id, failure)
        self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        StateFile(self._state_dir / f"{run_id}.json").remove()
        remove_quietly(self._spool_dir / f"{run_id}.tar.zst")
        remove_quietly(self._spool_dir / f"{run_id}.tar.zst.partial")


def _either(first: threading.Event, second: threading.Event) -> threading.Event:
    """An event set when either is set (checked by polling threads every half second)."""
    both = threading.Event()

    def watch() -> None:
        while not both.is_set():
            if first.is_set() or second.is_set():
                both.set()
                return
            first.wait(0.5)

    threading.Thread(target=watch, daemon=True).start()
    return both


def _safe(name: str) -> str:
    """A backup name fit for a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:100] or "backup"
