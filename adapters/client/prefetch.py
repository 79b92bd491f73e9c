"""Reading ahead for restore and check: the byte ranges the format's restore will ask for
are known from the manifest, in order, so a few are fetched while one is decoded.

The plan only speeds things up: a read that is not the next planned one is fetched
directly, so a plan that differs from what the reader does costs time, never bytes'
correctness. At most ``window`` ranges (each at most the restore's 8 MiB) are held.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from strongroom.client.snapshots import Manifest
from strongroom.client.snapshots.restore import Fetch, ranges, select

Read = tuple[str, int, int]
WINDOW = 4


def restore_plan(manifest: Manifest, include: Sequence[str] = ()) -> list[Read]:
    """The reads of a restore: per pack (in order of first use), its header, then the
    merged ranges of the blobs the chosen files need."""
    by_path = manifest.by_path()
    order: dict[bytes, None] = {}
    for entry in select(manifest, include):
        if entry.kind == "hardlink":
            source = by_path.get(entry.target or b"")
            chunks = source.chunks if source is not None else ()
        else:
            chunks = entry.chunks
        for cid in chunks:
            order.setdefault(cid)
    packs: dict[str, list[tuple[int, int, bytes]]] = {}
    for cid in order:
        loc = manifest.locations[cid]
        packs.setdefault(loc.pack.id, []).append((loc.offset, loc.length, cid))
    infos = manifest.packs()
    plan: list[Read] = []
    for pack_id, blobs in packs.items():
        plan.append((pack_id, 0, infos[pack_id].header_length))
        plan.extend((pack_id, start, length) for start, length, _ in ranges(blobs))
    return plan


def check_plan(manifest: Manifest, read_data: bool) -> list[Read]:
    """The reads of a check: each pack whole, or its header."""
    return [
        (p.id, 0, p.length if read_data else p.header_length) for p in manifest.packs().values()
    ]


class ReadAhead:
    """A ``Fetch`` that serves planned reads from a few fetched ahead."""

    def __init__(self, fetch: Fetch, plan: Sequence[Read], window: int = WINDOW) -> None:
        self._fetch = fetch
        self._plan = list(plan)
        self._window = window
        self._next = 0  # the next planned read the reader should ask for
        self._submitted = 0
        self._pending: dict[int, Future[bytes]] = {}
        self._pool = ThreadPoolExecutor(window, thread_name_prefix="read-ahead")
        self._lock = threading.Lock()
        self.unplanned = 0  # reads the plan did not foresee

    def __call__(self, pack_id: str, offset: int, length: int) -> bytes:
        with self._lock:
            planned = self._next < len(self._plan) and self._plan[self._next] == (
                pack_id,
                offset,
                length,
            )
            if not planned:
                future = None
            else:
                self._fill()
                future = self._pending.pop(self._next)
                self._next += 1
                self._fill()
        if future is None:
            self.unplanned += 1
            return self._fetch(pack_id, offset, length)
        return future.result()

    def _fill(self) -> None:
        while self._submitted < len(self._plan) and self._submitted < self._next + self._window:
            read = self._plan[self._submitted]
            self._pending[self._submitted] = self._pool.submit(self._fetch, *read)
            self._submitted += 1

    def close(self) -> None:
        for future in self._pending.values():
            future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
