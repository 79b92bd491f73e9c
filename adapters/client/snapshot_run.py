"""One snapshot run, from a directory to a confirmed run: the writer's packs uploaded as
they are finished (a few at once, so memory stays near a few packs), then the index, the
manifest and the sealed repository key in one batch, then ``confirm`` with the packs of
earlier runs the snapshot uses as ``references``.

A confirm refused because a referenced artifact was deleted in the meantime (409 naming
it) drops that pack from the catalog and writes the snapshot once more in the same run:
only the chunks that pack held are packed and uploaded again, and the second index and
manifest are named ``index.2`` and ``manifest.2`` (a run's names are unique; a reader
takes the highest-numbered manifest of a run).

Used by ``strongroom push`` (a person: the catalog comes from the service's indexes) and
by the agent (a write-only worker: the catalog is the one it keeps locally).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

import attrs
import httpx2

from strongroom.adapters.wire.artifacts import UploadRequest
from strongroom.client.errors import ConflictError
from strongroom.client.packs import put_bytes
from strongroom.client.snapshots import (
    Catalog,
    LocalCache,
    Pack,
    RepositoryKey,
    WriteOptions,
    decode_index,
    write_snapshot,
)
from strongroom.client.snapshots.scan import Excludes, Walked
from strongroom.client.uploads import Plan, UploadCancelledError

PACK_PREFIX = "pack-"
INDEX = "index"
MANIFEST = "manifest"
REPOSITORY_KEY = "repository-key"
IN_FLIGHT = 3
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def pack_name(pack_id: str) -> str:
    return PACK_PREFIX + pack_id


def pack_id_of(name: str) -> str | None:
    """The pack id of a ``pack-<sha256>`` artifact name (None for other names)."""
    return name[len(PACK_PREFIX) :] if name.startswith(PACK_PREFIX) else None


def rank(name: str, base: str) -> int | None:
    """1 for ``base``, n for ``base.n``, None for other names."""
    if name == base:
        return 1
    head, _, tail = name.rpartition(".")
    return int(tail) if head == base and tail.isdigit() else None


def is_snapshot_name(name: str) -> bool:
    """Whether an artifact name is one a snapshot run writes."""
    return pack_id_of(name) is not None or any(
        rank(name, base) is not None for base in (INDEX, MANIFEST, REPOSITORY_KEY)
    )


class SnapshotApi(Protocol):
    """The API calls a snapshot run makes (a worker's token is enough)."""

    def upload_urls(self, run_id: str, items: Sequence[UploadRequest]) -> list[Plan]: ...
    def confirm_snapshot(self, run_id: str, references: Sequence[str]) -> object: ...


@attrs.frozen
class Tree:
    """What the run backs up: one directory, minus the excluded names."""

    root: str
    excludes: tuple[str, ...] = ()

    # The walk ``measure`` made, taken by the first write (``take_walk``).
    _walked: list[Walked] = attrs.field(factory=list, eq=False, repr=False)

    def measure(self) -> tuple[int, int]:
        """Files and bytes below the root (for progress and its ETA). The walk is kept
        for the snapshot's first write, which then walks the tree no second time."""
        walked = Walked.of(os.fsencode(self.root), Excludes(self.excludes))
        self._walked[:] = [walked]
        files = size = 0
        for found in walked.found:
            if stat.S_ISREG(found.st.st_mode):
                files += 1
                size += found.st.st_size
        return files, size

    def take_walk(self) -> Walked | None:
        """The walk ``measure`` kept, once; None when there is none (walk again)."""
        return self._walked.pop() if self._walked else None


@attrs.frozen
class Keys:
    """What sealing a snapshot needs: the repository key, the recipients, and the key
    sealed to them (uploaded in every run so each run stands alone)."""

    repository_key: RepositoryKey
    recipients: tuple[str, ...]
    sealed_key: bytes


@attrs.define
class SnapshotOutcome:
    """What a snapshot run did."""

    run_id: str
    files: int = 0
    files_unchanged: int = 0
    bytes_total: int = 0
    bytes_read: int = 0
    bytes_uploaded: int = 0
    packs_uploaded: int = 0
    chunks_new: int = 0
    chunks_reused: int = 0
    references: list[str] = attrs.Factory(list)
    skipped: list[tuple[str, str]] = attrs.Factory(list)
    retried: bool = False
    dropped: set[str] = attrs.Factory(set)  # references the service refused (deleted)
    # Kept by the caller: the local cache, and this run's packs (id -> artifact id) and index.
    cache: LocalCache = attrs.Factory(LocalCache)
    new_packs: dict[str, str] = attrs.Factory(dict)
    indexes: list[bytes] = attrs.Factory(list)


class _Uploads:
    """Packs sent while the writer goes on: at most ``IN_FLIGHT`` held at once."""

    def __init__(
        self,
        api: SnapshotApi,
        http: httpx2.Client,
        run_id: str,
        stop: threading.Event,
        on_sent: Callable[[int], None] | None,
    ) -> None:
        self._api, self._http, self._run_id = api, http, run_id
        self._stop, self._on_sent = stop, on_sent
        self._pool = ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="pack-upload")
        self._slots = threading.Semaphore(IN_FLIGHT)
        self._futures: list[Future[None]] = []
        self.sent: dict[str, str] = {}  # pack id -> artifact id
        self.bytes = 0
        self._lock = threading.Lock()

    def submit(self, pack: Pack) -> None:
        if self._stop.is_set():
            raise UploadCancelledError("stopped")
        for future in [f for f in self._futures if f.done()]:
            future.result()  # a failed upload stops the run now
        self._slots.acquire()
        self._futures.append(self._pool.submit(self._send, pack))

    def _send(self, pack: Pack) -> None:
        try:
            name = pack_name(pack.info.id)
            item = UploadRequest(name, len(pack.data), pack.info.id)

            def ask() -> Plan:
                return self._api.upload_urls(self._run_id, [item])[0]

            plan = ask()
            put_bytes(self._http, name, pack.data, ask, plan, self._on_sent)
            with self._lock:
                self.sent[pack.info.id] = str(plan.artifact_id)
                self.bytes += len(pack.data)
        finally:
            self._slots.release()

    def finish(self) -> None:
        try:
            for future in self._futures:
                future.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _refused_ids(error: ConflictError) -> set[str]:
    return set(_UUID.findall(error.message.lower()))


def run_snapshot(
    api: SnapshotApi,
    http: httpx2.Client,
    run_id: str,
    tree: Tree,
    keys: Keys,
    catalog: Catalog,
    stored_packs: Mapping[str, str],
    cache: LocalCache,
    *,
    stop: threading.Event | None = None,
    on_bytes: Callable[[int], None] | None = None,
    on_file: Callable[[str], None] | None = None,
    on_sent: Callable[[int], None] | None = None,
    before_confirm: Callable[[], None] | None = None,
) -> SnapshotOutcome:
    """Write, upload and confirm the snapshot of ``tree`` in the run ``run_id``.

    ``catalog`` holds the chunks of earlier runs, ``stored_packs`` maps their pack ids to
    artifact ids (only packs in it are used); ``cache`` is the last local cache."""
    stop = stop or threading.Event()
    outcome = SnapshotOutcome(run_id)
    packs = dict(stored_packs)
    usable = catalog
    if not catalog.pack_ids() <= packs.keys():  # some packs are gone: leave their chunks out
        usable = Catalog(
            (cid, loc) for cid in catalog if (loc := catalog.get(cid)) and loc.pack.id in packs
        )
    for attempt in (1, 2):
        uploads = _Uploads(api, http, run_id, stop, on_sent)
        try:
            written = write_snapshot(
                tree.root,
                repository_key=keys.repository_key,
                recipients=keys.recipients,
                catalog=usable,
                emit_pack=uploads.submit,
                cache=cache,
                options=WriteOptions(excludes=tree.excludes),
                on_bytes=on_bytes,
                on_file=on_file,
                walked=tree.take_walk(),
            )
        finally:
            uploads.finish()
        _record(outcome, written, uploads)
        suffix = "" if attempt == 1 else f".{attempt}"
        objects = [
            (INDEX + suffix, written.index),
            (MANIFEST + suffix, written.manifest),
            (REPOSITORY_KEY, keys.sealed_key),
        ]
        items = [UploadRequest(n, len(d), hashlib.sha256(d).hexdigest()) for n, d in objects]
        plans = api.upload_urls(run_id, items)
        for (name, data), plan, item in zip(objects, plans, items, strict=True):
            put_bytes(http, name, data, _asker(api, run_id, item), plan)
            outcome.bytes_uploaded += len(data)
        outcome.indexes.append(written.index)
        references = [packs[p] for p in written.references if p in packs]
        if before_confirm is not None:
            before_confirm()
        try:
            api.confirm_snapshot(run_id, references)
        except ConflictError as error:
            refused = _refused_ids(error) & set(references)
            if attempt == 2 or not refused:
                raise
            # Drop the refused packs; this run's new packs join the catalog.
            packs = {p: a for p, a in packs.items() if a not in refused}
            rows = [
                (cid, loc)
                for cid in usable
                if (loc := usable.get(cid)) is not None and loc.pack.id in packs
            ]
            usable = Catalog(rows)
            usable.update(decode_index(keys.repository_key, written.index))
            packs.update(uploads.sent)
            cache = written.cache
            outcome.retried = True
            outcome.dropped |= refused
            continue
        outcome.references = references
        outcome.cache = written.cache
        return outcome
    raise AssertionError("unreachable")


def _asker(api: SnapshotApi, run_id: str, item: UploadRequest) -> Callable[[], Plan]:
    return lambda: api.upload_urls(run_id, [item])[0]


def _record(outcome: SnapshotOutcome, written: object, uploads: _Uploads) -> None:
    stats = written.stats  # type: ignore[attr-defined]
    outcome.files = stats.files
    outcome.files_unchanged = stats.files_unchanged
    outcome.bytes_total = stats.bytes_total
    outcome.bytes_read += stats.bytes_read
    outcome.chunks_new += stats.chunks_new
    outcome.chunks_reused = stats.chunks_reused
    outcome.bytes_uploaded += uploads.bytes
    outcome.packs_uploaded += len(uploads.sent)
    outcome.new_packs.update(uploads.sent)
    outcome.skipped = list(written.skipped)  # type: ignore[attr-defined]
