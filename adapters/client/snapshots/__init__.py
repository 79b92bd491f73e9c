"""Snapshots: deduplicated, end-to-end encrypted directory backups (docs/format.md).

Pure client-side: no network. The writer needs the repository key and the recipients
only (a write-only worker); the reader needs the person's age identity.
"""

from strongroom.client.snapshots.browse import Change, diff, ls
from strongroom.client.snapshots.cache import LocalCache
from strongroom.client.snapshots.check import CheckReport, check
from strongroom.client.snapshots.errors import (
    FormatError,
    IntegrityError,
    SnapshotError,
    SnapshotKeyError,
)
from strongroom.client.snapshots.index import Catalog, decode_index, encode_index
from strongroom.client.snapshots.keys import (
    Identity,
    RepositoryKey,
    check_recipients,
    generate_identity,
    load_identity,
)
from strongroom.client.snapshots.manifest import Entry, Manifest, open_manifest
from strongroom.client.snapshots.pack import ChunkLocation, Pack, PackInfo
from strongroom.client.snapshots.reader import SnapshotReader
from strongroom.client.snapshots.restore import Fetch, RestoreStats, restore
from strongroom.client.snapshots.writer import (
    SnapshotWrite,
    WriteOptions,
    WriteStats,
    write_snapshot,
)

__all__ = [
    "Catalog",
    "Change",
    "CheckReport",
    "ChunkLocation",
    "Entry",
    "Fetch",
    "FormatError",
    "Identity",
    "IntegrityError",
    "LocalCache",
    "Manifest",
    "Pack",
    "PackInfo",
    "RepositoryKey",
    "RestoreStats",
    "SnapshotError",
    "SnapshotKeyError",
    "SnapshotReader",
    "SnapshotWrite",
    "WriteOptions",
    "WriteStats",
    "check",
    "check_recipients",
    "decode_index",
    "diff",
    "encode_index",
    "generate_identity",
    "load_identity",
    "ls",
    "open_manifest",
    "restore",
    "write_snapshot",
]
