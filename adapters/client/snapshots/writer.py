"""Writing a snapshot: a directory in; packs, an index and a sealed manifest out.

The writer needs only the repository key and the recipients (never the identity): it is
what a write-only worker runs. Chunks the catalog already holds are not packed again,
and files whose size, mtime, ctime and inode match the local cache are not even read. Packs are
handed to ``emit_pack`` as soon as they are full, so memory stays near one pack.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import attrs

from strongroom.client.snapshots.cache import CachedFile, LocalCache
from strongroom.client.snapshots.chunker import MIN_SIZE, chunks
from strongroom.client.snapshots.crypto import DEFAULT_COMPRESSION_LEVEL, BlobCodec, chunk_id
from strongroom.client.snapshots.errors import SnapshotError
from strongroom.client.snapshots.index import Catalog, encode_index
from strongroom.client.snapshots.keys import RepositoryKey, check_recipients
from strongroom.client.snapshots.manifest import Entry, make_manifest, seal_manifest
from strongroom.client.snapshots.pack import ChunkLocation, Pack, PackBuilder, PackInfo
from strongroom.client.snapshots.scan import (
    Excludes,
    Found,
    Skipped,
    Walked,
    read_xattrs,
    walk,
)

DEFAULT_PACK_SIZE = 32 << 20
_IN_FLIGHT = 8
_THREADS = min(2, os.cpu_count() or 1)


@attrs.frozen
class WriteOptions:
    pack_size: int = DEFAULT_PACK_SIZE
    compression_level: int = DEFAULT_COMPRESSION_LEVEL
    excludes: tuple[str, ...] = ()


@attrs.define
class WriteStats:
    files: int = 0
    files_unchanged: int = 0
    bytes_read: int = 0
    bytes_total: int = 0
    chunks_new: int = 0
    chunks_reused: int = 0
    bytes_packed: int = 0


@attrs.frozen
class SnapshotWrite:
    """What a run produced: upload the packs (already emitted), the index and the manifest;
    keep ``cache`` locally; declare ``references`` (earlier packs this snapshot uses)."""

    manifest: bytes
    index: bytes
    cache: LocalCache
    new_packs: tuple[PackInfo, ...]
    references: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    stats: WriteStats


class _Packer:
    """The current pack, and where this run's new chunks ended up.

    Compression, the slow step, runs on a small thread pool (zstd releases the GIL); blobs
    are sealed and appended in submission order, with a bounded number in flight so memory
    stays near one pack plus ``_IN_FLIGHT`` chunks."""

    def __init__(
        self,
        recipients: Sequence[str],
        options: WriteOptions,
        emit: Callable[[Pack], None],
        pool: ThreadPoolExecutor,
    ) -> None:
        self._recipients = recipients
        self._options = options
        self._emit = emit
        self._pool = pool
        self._codecs = threading.local()
        self._codec = BlobCodec(options.compression_level)
        self._builder: PackBuilder | None = None
        self._queue: deque[tuple[bytes, int, Future[bytes]]] = deque()
        self.pending: set[bytes] = set()
        self.located: dict[bytes, ChunkLocation] = {}
        self.packs: list[PackInfo] = []
        self.bytes_packed = 0

    def _compress(self, data: bytes) -> bytes:
        codec = getattr(self._codecs, "codec", None)
        if codec is None:
            codec = self._codecs.codec = BlobCodec(self._options.compression_level)
        plaintext: bytes = codec.compress(data)
        return plaintext

    def add(self, cid: bytes, data: memoryview | bytes) -> None:
        self.pending.add(cid)
        self._queue.append((cid, len(data), self._pool.submit(self._compress, bytes(data))))
        while len(self._queue) > _IN_FLIGHT:
            self._append()

    def _append(self) -> None:
        cid, raw_length, future = self._queue.popleft()
        if self._builder is None:
            self._builder = PackBuilder(self._recipients, self._codec)
        self._builder.add_plaintext(cid, future.result(), raw_length)
        if self._builder.size >= self._options.pack_size:
            self._finish()

    def __contains__(self, cid: bytes) -> bool:
        return cid in self.pending or cid in self.located

    def flush(self) -> None:
        while self._queue:
            self._append()
        self._finish()

    def _finish(self) -> None:
        if self._builder is None or self._builder.empty:
            return
        pack = self._builder.finish()
        self._builder = None
        self._emit(pack)
        self.located.update(pack.chunks)
        self.pending.difference_update(cid for cid, _ in pack.chunks)
        self.packs.append(pack.info)
        self.bytes_packed += pack.info.length


@attrs.define
class _Run:
    key: RepositoryKey
    catalog: Catalog
    old_cache: LocalCache
    packer: _Packer
    on_bytes: Callable[[int], None] | None
    on_file: Callable[[str], None] | None
    stats: WriteStats = attrs.field(factory=WriteStats)
    cache: LocalCache = attrs.field(factory=LocalCache)
    links: dict[tuple[int, int], bytes] = attrs.field(factory=dict)

    def known(self, cid: bytes) -> bool:
        return cid in self.packer or cid in self.catalog

    def entry(self, found: Found, skipped: Skipped) -> Entry | None:
        """The entry of a name; None (and a line in ``skipped``) when it cannot be read."""
        try:
            return self._entry(found)
        except OSError as error:
            skipped.append((os.fsdecode(found.rel), error.strerror or str(error)))
            return None

    def _entry(self, found: Found) -> Entry:
        st = found.st
        kind, size, target = "dir", 0, None
        ids: tuple[bytes, ...] = ()
        if stat.S_ISLNK(st.st_mode):
            kind, target = "symlink", os.readlink(found.path)
        elif not stat.S_ISDIR(st.st_mode):
            inode = (st.st_dev, st.st_ino)
            if st.st_nlink > 1 and inode in self.links:
                kind, target = "hardlink", self.links[inode]
            else:
                kind = "file"
                size, ids = self.file_chunks(found)
                if st.st_nlink > 1:  # only once read: a later name must not link to a skipped file
                    self.links[inode] = found.rel
        return Entry(  # one construction per name (attrs.evolve cost 15 µs a name)
            path=found.rel,
            kind=kind,
            mode=stat.S_IMODE(st.st_mode),
            mtime_ns=st.st_mtime_ns,
            uid=st.st_uid,
            gid=st.st_gid,
            size=size,
            chunks=ids,
            target=target,
            xattrs=read_xattrs(found.path),
        )

    def file_chunks(self, found: Found) -> tuple[int, tuple[bytes, ...]]:
        st = found.st
        self.stats.files += 1
        if self.on_file is not None:
            self.on_file(os.fsdecode(found.rel))
        cached = self.old_cache.get(found.rel)
        if (
            cached is not None
            and cached.matches(st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
            and all(self.known(c) for c in cached.chunks)
        ):
            self.stats.files_unchanged += 1
            self.stats.bytes_total += cached.size
            self.stats.chunks_reused += len(cached.chunks)
            if cached.ctime_ns != st.st_ctime_ns:  # from a version 1 cache
                cached = cached._replace(ctime_ns=st.st_ctime_ns)
            self.cache.put(found.rel, cached)
            self._progress(cached.size)
            return cached.size, cached.chunks
        size, ids = self.read_file(found.path)
        self.stats.bytes_total += size
        self.cache.put(found.rel, CachedFile(size, st.st_mtime_ns, st.st_ino, ids, st.st_ctime_ns))
        return size, ids

    def read_file(self, path: bytes) -> tuple[int, tuple[bytes, ...]]:
        flags = os.O_RDONLY | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags | getattr(os, "O_NOATIME", 0))
        except PermissionError:  # O_NOATIME needs the file's owner: read it anyway
            fd = os.open(path, flags)
        with os.fdopen(fd, "rb", buffering=0) as stream:
            head = stream.read(MIN_SIZE + 1)
            if len(head) <= MIN_SIZE:
                pieces: list[bytes | memoryview] = [head] if head else []
                return len(head), tuple(self.store(p) for p in pieces)
            stream.seek(0)
            size = 0
            ids = []
            for piece in chunks(stream):
                size += len(piece)
                ids.append(self.store(piece))
            return size, tuple(ids)

    def store(self, data: bytes | memoryview) -> bytes:
        cid = chunk_id(self.key.chunk_id_key, data)
        if self.known(cid):
            self.stats.chunks_reused += 1
        else:
            self.stats.chunks_new += 1
            self.packer.add(cid, data)
        self.stats.bytes_read += len(data)
        self._progress(len(data))
        return cid

    def _progress(self, size: int) -> None:
        if self.on_bytes is not None:
            self.on_bytes(size)


def write_snapshot(
    root: str | os.PathLike[str],
    *,
    repository_key: RepositoryKey,
    recipients: Sequence[str],
    catalog: Catalog,
    emit_pack: Callable[[Pack], None],
    cache: LocalCache | None = None,
    options: WriteOptions | None = None,
    on_bytes: Callable[[int], None] | None = None,
    on_file: Callable[[str], None] | None = None,
    walked: Walked | None = None,
) -> SnapshotWrite:
    """Snapshots the tree at ``root``; packs go to ``emit_pack`` while it runs.
    ``walked``: the names below ``root`` as a walk of it found them (``Walked``), when the
    caller walked it already (to measure it); else the tree is walked here."""
    recipients = check_recipients(recipients)
    options = options or WriteOptions()
    skipped: Skipped = [] if walked is None else list(walked.skipped)
    created_ns = time.time_ns()
    with ThreadPoolExecutor(_THREADS, thread_name_prefix="snapshot-zstd") as pool:
        packer = _Packer(recipients, options, emit_pack, pool)
        run = _Run(repository_key, catalog, cache or LocalCache(), packer, on_bytes, on_file)
        found = (
            walk(os.fsencode(root), Excludes(options.excludes), skipped)
            if walked is None
            else walked.found
        )
        entries = [e for e in (run.entry(item, skipped) for item in found) if e is not None]
        packer.flush()
    locations: dict[bytes, ChunkLocation] = dict(packer.located)
    references: dict[str, None] = {}
    for entry in entries:
        for cid in entry.chunks:
            if cid not in locations:
                loc = catalog.get(cid)
                if loc is None:
                    raise SnapshotError("a chunk vanished from the catalog during the run")
                locations[cid] = loc
                references[loc.pack.id] = None
    manifest = make_manifest(created_ns, entries, locations)
    run.stats.bytes_packed = packer.bytes_packed
    return SnapshotWrite(
        manifest=seal_manifest(manifest, recipients),
        index=encode_index(repository_key, packer.located.items()),
        cache=run.cache,
        new_packs=tuple(packer.packs),
        references=tuple(references),
        skipped=tuple(skipped),
        stats=run.stats,
    )
