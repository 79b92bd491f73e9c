"""Reading snapshots with the person's identity: ls, restore, check."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from strongroom.client.snapshots.browse import ls
from strongroom.client.snapshots.check import CheckReport, check
from strongroom.client.snapshots.keys import Identity, RepositoryKey
from strongroom.client.snapshots.manifest import Entry, open_manifest
from strongroom.client.snapshots.restore import Fetch, RestoreStats, restore


class SnapshotReader:
    """One snapshot opened: the sealed repository key and manifest opened by the identity;
    pack bytes come from ``fetch(pack_id, offset, length)``."""

    def __init__(
        self, identity: Identity, sealed_repository_key: bytes, manifest: bytes, fetch: Fetch
    ) -> None:
        self.identity = identity
        self.key = RepositoryKey.unseal(sealed_repository_key, identity)
        self.manifest = open_manifest(manifest, identity)
        self.fetch = fetch

    def ls(self, path: str = "") -> list[Entry]:
        return ls(self.manifest, path)

    def restore(
        self,
        target: str | os.PathLike[str],
        include: Sequence[str] = (),
        on_bytes: Callable[[int], None] | None = None,
    ) -> RestoreStats:
        return restore(
            self.manifest, self.key, self.identity, self.fetch, target, include, on_bytes
        )

    def check(self, read_data: bool = False) -> CheckReport:
        return check(self.manifest, self.key, self.identity, self.fetch, read_data)
