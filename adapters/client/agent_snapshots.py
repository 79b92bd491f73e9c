"""The agent's side of a snapshot backup: what it keeps in its state directory, per
backup, since a write-only worker cannot read anything back from the service.

- ``indexes/<run id>``: the index of each run it confirmed (the chunks it stored);
- ``packs.json``: pack id -> artifact id of the packs those runs uploaded;
- ``cache``: the local cache of its last snapshot (size, mtime, inode per file).

A cold start (an empty state directory) uploads everything again: correct, not
deduplicated. A pack whose reference the service refused is dropped from ``packs.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from strongroom.client.snapshot_run import SnapshotOutcome
from strongroom.client.snapshots import Catalog, LocalCache, RepositoryKey, decode_index
from strongroom.client.snapshots.errors import SnapshotError


def write_private(path: Path, data: bytes) -> None:
    """``data`` written atomically to ``path``, mode 0600 (it names files)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as output:
        output.write(data)
        output.flush()
        os.fsync(output.fileno())
    os.replace(partial, path)


class AgentSnapshotState:
    """One backup's catalog and cache, under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def packs(self) -> dict[str, str]:
        try:
            loaded = json.loads((self.directory / "packs.json").read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}

    def catalog(self, key: RepositoryKey) -> Catalog:
        catalog = Catalog()
        folder = self.directory / "indexes"
        for path in sorted(folder.iterdir()) if folder.is_dir() else ():
            try:
                catalog.update(decode_index(key, path.read_bytes()))
            except (OSError, SnapshotError):
                continue  # another key (the config changed) or damaged: not used
        return catalog

    def cache(self) -> LocalCache:
        path = self.directory / "cache"
        return LocalCache.from_bytes(path.read_bytes() if path.is_file() else None)

    def keep(self, outcome: SnapshotOutcome) -> None:
        """What a confirmed run adds: its indexes, its packs, its cache (and the packs
        the service refused as references, dropped)."""
        packs = {p: a for p, a in self.packs().items() if a not in outcome.dropped}
        packs.update(outcome.new_packs)
        for number, index in enumerate(outcome.indexes, start=1):
            write_private(self.directory / "indexes" / f"{outcome.run_id}.{number}", index)
        write_private(self.directory / "packs.json", json.dumps(packs).encode())
        write_private(self.directory / "cache", outcome.cache.to_bytes())
