"""Sending a file to the presigned URLs of ``upload-url``: one PUT, or the parts of a
multipart upload in parallel, resumed by sending only the parts storage does not hold.

The bytes go straight to storage (the API only presigns). Files are read in chunks: no
part is held whole in memory. A part that fails on the way (connection error, 5xx) is
retried with backoff; URLs that expired (403 after their 15 minutes) are asked for again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import IO, Protocol
from uuid import UUID

import attrs
import httpx2

CHUNK = 1024 * 1024
PART_ATTEMPTS = 4
PLAN_ATTEMPTS = 3
DEFAULT_PARALLEL = 4


class PresignedPart(Protocol):
    """One part of a multipart plan (the SDK's ``UploadPart``)."""

    @property
    def number(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def url(self) -> str: ...


class MultipartPlan(Protocol):
    """``upload-url``'s answer for a large artifact (the SDK's ``MultipartUpload``)."""

    @property
    def artifact_id(self) -> UUID: ...
    @property
    def upload_id(self) -> str: ...
    @property
    def part_size(self) -> int: ...
    @property
    def parts(self) -> Sequence[PresignedPart]: ...
    @property
    def stored_parts(self) -> Sequence[int]: ...


class SinglePlan(Protocol):
    """``upload-url``'s answer for one PUT (the SDK's ``SingleUpload``)."""

    @property
    def artifact_id(self) -> UUID: ...
    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...


Plan = SinglePlan | MultipartPlan
# Asks ``upload-url`` (again) for the artifact: a fresh plan with fresh URLs.
AskPlan = Callable[[], "SinglePlan | MultipartPlan"]


class UploadError(Exception):
    """Storage refused the bytes, or kept failing."""


class UploadCancelledError(Exception):
    """The upload was stopped on request (cancel, SIGTERM, Ctrl-C)."""


class _ExpiredError(Exception):
    """Storage answered 403: the presigned URLs expired."""


@attrs.frozen
class Prepared:
    """A file ready to be announced: where it is, its artifact name, size and sha256."""

    path: Path
    name: str
    size: int
    sha256: str


@attrs.define
class SendReport:
    """What one upload did: the artifact, the parts sent now and those found stored."""

    artifact_id: UUID | None = None
    parts_sent: int = 0
    parts_skipped: int = 0
    bytes_sent: int = 0
    sent: set[int] = attrs.Factory(set)
    skipped: set[int] = attrs.Factory(set)


def is_multipart(plan: Plan) -> bool:
    """Whether ``plan`` is a multipart plan."""
    return hasattr(plan, "parts")


def hash_file(path: Path, on_bytes: Callable[[int], None] | None = None) -> tuple[int, str]:
    """A file's size and sha256, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as source:
        while data := source.read(CHUNK):
            digest.update(data)
            size += len(data)
            if on_bytes is not None:
                on_bytes(len(data))
    return size, digest.hexdigest()


def spool(chunks: Iterable[bytes], target: Path) -> tuple[int, str]:
    """Write ``chunks`` to ``target`` (atomically: a temporary name, then renamed); the
    size and sha256 of what was written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    size = 0
    with partial.open("wb") as output:
        for chunk in chunks:
            output.write(chunk)
            digest.update(chunk)
            size += len(chunk)
        output.flush()
        os.fsync(output.fileno())
    os.replace(partial, target)
    return size, digest.hexdigest()


def copy_stream(source: IO[bytes], target: Path) -> tuple[int, str]:
    """Spool a readable stream (stdin) to ``target``; its size and sha256."""

    def chunks() -> Iterator[bytes]:
        while data := source.read(CHUNK):
            yield data

    return spool(chunks(), target)


def remove_quietly(path: Path) -> None:
    """Remove a file or directory if it is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class Sender:
    """Sends prepared files to their presigned URLs.

    ``on_bytes(n)`` is called as bytes leave (progress bars, heartbeats); ``on_part(n)``
    when part ``n`` is stored (a resume state file); ``stop`` is checked between chunks.
    """

    def __init__(
        self,
        transport: httpx2.Client,
        *,
        parallel: int = DEFAULT_PARALLEL,
        on_bytes: Callable[[int], None] | None = None,
        on_part: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
        retry_delay: float = 1.0,
    ) -> None:
        self._http = transport
        self._parallel = max(1, parallel)
        self._on_bytes = on_bytes or (lambda _: None)
        self._on_part = on_part or (lambda _: None)
        self._stop = stop or threading.Event()
        self._retry_delay = retry_delay
        self._lock = threading.Lock()

    def send(self, prepared: Prepared, ask: AskPlan) -> SendReport:
        """Upload ``prepared``: ask for a plan, send what storage lacks; ask again when the
        URLs expired."""
        report = SendReport()
        for _ in range(PLAN_ATTEMPTS):
            plan = ask()
            report.artifact_id = plan.artifact_id
            try:
                if is_multipart(plan):
                    self._send_parts(prepared, plan, report)  # type: ignore[arg-type]
                else:
                    self._send_single(prepared, plan, report)  # type: ignore[arg-type]
            except _ExpiredError:
                continue
            return report
        raise UploadError(f"{prepared.name}: storage kept refusing the upload URLs")

    def _send_single(self, prepared: Prepared, plan: SinglePlan, report: SendReport) -> None:
        headers = {**plan.headers, "Content-Length": str(prepared.size)}
        self._put(plan.url, prepared.path, 0, prepared.size, headers, prepared.name)
        report.parts_sent += 1
        report.bytes_sent += prepared.size

    def _send_parts(self, prepared: Prepared, plan: MultipartPlan, report: SendReport) -> None:
        stored = set(plan.stored_parts)
        missing = [part for part in plan.parts if part.number not in stored]
        # Stored before this upload began (not by an earlier round of it, after a re-ask).
        skipped = [p for p in plan.parts if p.number in stored and p.number not in report.sent]
        report.parts_skipped = len(skipped)
        newly = [part for part in skipped if part.number not in report.skipped]
        report.skipped.update(part.number for part in newly)
        if newly:
            self._on_bytes(sum(part.size for part in newly))

        def one(part: PresignedPart) -> None:
            offset = (part.number - 1) * plan.part_size
            headers = {"Content-Length": str(part.size)}
            self._put(part.url, prepared.path, offset, part.size, headers, prepared.name)
            with self._lock:
                report.parts_sent += 1
                report.bytes_sent += part.size
                report.sent.add(part.number)
            self._on_part(part.number)

        pool = ThreadPoolExecutor(self._parallel, thread_name_prefix="part")
        try:
            futures = [pool.submit(one, part) for part in missing]
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in finished if f.exception() is not None]
            if failed:
                error = failed[0].exception()
                assert error is not None
                raise error
        except _ExpiredError:
            raise  # asked again by ``send``; parts not begun are dropped
        except BaseException:
            # A failed part or Ctrl-C: parts not begun are dropped, those on the way stop
            # at their next chunk.
            self._stop.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _put(
        self, url: str, path: Path, offset: int, length: int, headers: dict[str, str], name: str
    ) -> None:
        """PUT ``length`` bytes of ``path`` from ``offset``, retried on transient failures."""
        for attempt in range(1, PART_ATTEMPTS + 1):
            if self._stop.is_set():
                raise UploadCancelledError(name)
            sent: list[int] = [0]
            try:
                response = self._http.put(
                    url, content=self._read(path, offset, length, sent), headers=headers
                )
            except httpx2.TransportError as error:
                self._on_bytes(-sent[0])
                if attempt == PART_ATTEMPTS:
                    raise UploadError(f"{name}: storage unreachable: {error}") from error
            else:
                if response.status_code < 300:
                    return
                self._on_bytes(-sent[0])
                if response.status_code == 403:
                    raise _ExpiredError
                if response.status_code < 500 or attempt == PART_ATTEMPTS:
                    raise UploadError(
                        f"{name}: storage refused the upload ({response.status_code}): "
                        f"{response.text[:300]}"
                    )
            time.sleep(self._retry_delay * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def _read(self, path: Path, offset: int, length: int, sent: list[int]) -> Iterator[bytes]:
        with path.open("rb") as source:
            source.seek(offset)
            left = length
            while left:
                if self._stop.is_set():
                    raise UploadCancelledError(path.name)
                data = source.read(min(CHUNK, left))
                if not data:
                    raise UploadError(f"{path}: shorter than announced")
                left -= len(data)
                sent[0] += len(data)
                self._on_bytes(len(data))
                yield data
