"""Restoring a snapshot, whole or some paths of it, bit for bit, verifying every chunk.

Chunks are fetched pack by pack, in byte ranges that cover only the blobs the chosen files
need (neighbouring blobs share one request), and written straight to their places by a
few threads while the next range is fetched, so memory stays near a few ranges.
Directories and files of several chunks (or none) are created first, a file of one chunk
when that chunk is written (one open per file), links last, and metadata (xattrs, owner
when root, mode, mtime) is set bottom-up after all content.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import attrs

from strongroom.client.snapshots.crypto import Aead, BlobCodec
from strongroom.client.snapshots.errors import FormatError, IntegrityError, SnapshotError
from strongroom.client.snapshots.keys import Identity, RepositoryKey
from strongroom.client.snapshots.manifest import Entry, Manifest
from strongroom.client.snapshots.pack import ChunkLocation, PackInfo, open_data_key
from strongroom.client.snapshots.scan import set_xattrs

# Fetch(pack id, offset, length) -> exactly those bytes of the pack.
Fetch = Callable[[str, int, int], bytes]
MAX_RANGE = 8 << 20
MERGE_GAP = 64 << 10
# Ranges are decoded and written on one thread while the main thread takes the next from
# the read-ahead (AES-GCM, zstd, BLAKE3 and the writes release the GIL); memory stays
# near _IN_FLIGHT ranges. Two writing threads were not faster: creating files in the same
# directories contends on the filesystem.
_THREADS = 1
_IN_FLIGHT = 2


@attrs.define
class RestoreStats:
    files: int = 0
    bytes_written: int = 0
    bytes_fetched: int = 0
    requests: int = 0
    xattrs_refused: list[str] = attrs.field(factory=list)


def check_paths(manifest: Manifest) -> None:
    """Refuses a manifest whose names could escape the target or pass through a link."""
    kinds = {b"": "dir"}
    for entry in manifest.entries:
        if entry.path == b"":
            continue
        parts = entry.path.split(b"/")
        if entry.path.startswith(b"/") or any(p in (b"", b".", b"..") for p in parts):
            raise FormatError(f"unsafe path in manifest: {entry.name}")
        parent = entry.path.rpartition(b"/")[0]
        if kinds.get(parent) != "dir":
            raise FormatError(f"entry outside a directory of the manifest: {entry.name}")
        kinds[entry.path] = entry.kind


def select(manifest: Manifest, include: Sequence[str]) -> list[Entry]:
    """The entries under any of ``include`` (all when empty), with their parent directories."""
    if not include:
        return list(manifest.entries)
    wanted = [os.fsencode(p).strip(b"/") for p in include]
    chosen = {
        e.path
        for e in manifest.entries
        if any(w in (b"", e.path) or e.path.startswith(w + b"/") for w in wanted)
    }
    if not chosen:
        raise SnapshotError(f"no path of the snapshot matches {', '.join(include)}")
    for path in list(chosen):
        parent = path
        while parent:
            parent = parent.rpartition(b"/")[0]
            chosen.add(parent)
    return [e for e in manifest.entries if e.path in chosen]


def ranges(
    blobs: Iterable[tuple[int, int, bytes]],
) -> list[tuple[int, int, list[tuple[int, int, bytes]]]]:
    """Blobs (offset, length, id) grouped into fetches (start, length, blobs)."""
    out: list[tuple[int, int, list[tuple[int, int, bytes]]]] = []
    for offset, length, cid in sorted(set(blobs)):
        if out:
            start, size, group = out[-1]
            end = start + size
            if offset - end <= MERGE_GAP and offset + length - start <= MAX_RANGE:
                out[-1] = (
                    start,
                    max(end, offset + length) - start,
                    [*group, (offset, length, cid)],
                )
                continue
        out.append((offset, length, [(offset, length, cid)]))
    return out


def fetch_exact(fetch: Fetch, pack: PackInfo, offset: int, length: int) -> bytes:
    data = fetch(pack.id, offset, length)
    if len(data) != length:
        raise IntegrityError(f"pack {pack.id} returned {len(data)} bytes for {length}")
    return data


class _Restorer:
    def __init__(
        self,
        manifest: Manifest,
        key: RepositoryKey,
        identity: Identity,
        fetch: Fetch,
        target: bytes,
        on_bytes: Callable[[int], None] | None,
    ) -> None:
        self.manifest = manifest
        self.key = key
        self.identity = identity
        self.fetch = fetch
        self.target = target
        self.on_bytes = on_bytes
        self.stats = RestoreStats()
        # Per chunk, where it goes: (path, offset, whether writing it creates the file).
        self.places: dict[bytes, list[tuple[bytes, int, bool]]] = defaultdict(list)
        self._lock = threading.Lock()

    def at(self, path: bytes) -> bytes:
        return self.target + b"/" + path if path else self.target

    def run(self, entries: list[Entry]) -> RestoreStats:
        by_path = self.manifest.by_path()
        files: dict[bytes, Entry] = {}
        links: list[tuple[Entry, bytes]] = []
        first_name: dict[bytes, bytes] = {}
        os.makedirs(self.target, exist_ok=True)
        for entry in entries:
            if entry.kind == "dir" and entry.path:
                os.makedirs(self.at(entry.path), mode=0o700, exist_ok=True)
            elif entry.kind == "file":
                files[entry.path] = entry
                first_name[entry.path] = entry.path
            elif entry.kind == "hardlink":
                source = by_path.get(entry.target or b"")
                if source is None or source.kind != "file":
                    raise FormatError(f"hard link to a missing file: {entry.name}")
                if source.path in first_name:
                    links.append((entry, first_name[source.path]))
                else:  # the first name was not chosen: this name holds the content
                    files[entry.path] = source._replace(path=entry.path, xattrs=entry.xattrs)
                    first_name[source.path] = entry.path
        for entry in files.values():
            self.create(entry)
        self.fill()
        for entry, first in links:
            os.link(self.at(first), self.at(entry.path), follow_symlinks=False)
        for entry in entries:
            if entry.kind == "symlink":
                os.symlink(entry.target or b"", self.at(entry.path))
        for entry in reversed(entries):
            if entry.kind != "hardlink" or entry.path in files:
                self.finish(files.get(entry.path, entry))
        return self.stats

    def create(self, entry: Entry) -> None:
        locations, path = self.manifest.locations, self.at(entry.path)
        whole = len(entry.chunks) == 1  # created by its one write
        offset = 0
        for cid in entry.chunks:
            self.places[cid].append((path, offset, whole))
            offset += locations[cid].raw_length
        if offset != entry.size:
            raise FormatError(f"chunks of {entry.name} do not add up to its size")
        if not whole:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            fd = os.open(path, flags, 0o600)
            try:
                os.ftruncate(fd, entry.size)
            finally:
                os.close(fd)
        self.stats.files += 1

    def fill(self) -> None:
        by_pack: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
        packs: dict[str, PackInfo] = {}
        for cid in self.places:
            loc: ChunkLocation = self.manifest.locations[cid]
            by_pack[loc.pack.id].append((loc.offset, loc.length, cid))
            packs[loc.pack.id] = loc.pack
        slots = threading.Semaphore(_IN_FLIGHT)
        futures: list[Future[None]] = []
        with ThreadPoolExecutor(_THREADS, thread_name_prefix="restore") as pool:
            try:
                for pack_id, blobs in by_pack.items():
                    pack = packs[pack_id]
                    header = fetch_exact(self.fetch, pack, 0, pack.header_length)
                    self.count(len(header))
                    aead = open_data_key(header, self.identity)
                    for start, length, group in ranges(blobs):
                        data = fetch_exact(self.fetch, pack, start, length)
                        self.count(length)
                        slots.acquire()
                        futures.append(
                            pool.submit(self._decode, pack_id, aead, data, start, group, slots)
                        )
                        while futures and futures[0].done():
                            futures.pop(0).result()  # a failed range stops the restore now
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        for future in futures:
            future.result()

    def _decode(
        self,
        pack_id: str,
        aead: Aead,
        data: bytes,
        start: int,
        group: list[tuple[int, int, bytes]],
        slots: threading.Semaphore,
    ) -> None:
        try:
            view, codec = memoryview(data), BlobCodec()
            for offset, size, cid in group:
                blob = view[offset - start : offset - start + size]
                try:
                    chunk = codec.decode(aead, cid, blob, self.key.chunk_id_key)
                except IntegrityError as error:
                    names = tuple(os.fsdecode(p) for p, _, _ in self.places[cid])
                    raise IntegrityError(f"pack {pack_id}: {error}", names) from error
                self.write(cid, chunk)
        finally:
            slots.release()

    def count(self, fetched: int) -> None:
        self.stats.bytes_fetched += fetched
        self.stats.requests += 1

    def write(self, cid: bytes, chunk: bytes) -> None:
        for path, offset, whole in self.places[cid]:
            if whole:
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                fd = os.open(path, flags, 0o600)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
            try:
                os.pwrite(fd, chunk, offset)
            finally:
                os.close(fd)
            with self._lock:
                self.stats.bytes_written += len(chunk)
            if self.on_bytes is not None:
                self.on_bytes(len(chunk))

    def finish(self, entry: Entry) -> None:
        path = self.at(entry.path)
        self.stats.xattrs_refused += [f"{entry.name}: {n}" for n in set_xattrs(path, entry.xattrs)]
        if os.geteuid() == 0:
            os.chown(path, entry.uid, entry.gid, follow_symlinks=False)
        if entry.kind != "symlink":
            os.chmod(path, entry.mode)
        os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)


def restore(
    manifest: Manifest,
    key: RepositoryKey,
    identity: Identity,
    fetch: Fetch,
    target: str | os.PathLike[str],
    include: Sequence[str] = (),
    on_bytes: Callable[[int], None] | None = None,
) -> RestoreStats:
    """Restores the snapshot (or the ``include`` paths) under ``target``."""
    check_paths(manifest)
    entries = select(manifest, include)
    return _Restorer(manifest, key, identity, fetch, os.fsencode(target), on_bytes).run(entries)
