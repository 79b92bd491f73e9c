"""Checking a snapshot: its structure, its packs' headers and, with ``read_data``, every
blob of every pack it references (tag, decompression, keyed hash), naming the files that a
damaged pack or chunk affects."""

from __future__ import annotations

import os
from collections import defaultdict

import attrs

from strongroom.client.snapshots.crypto import BlobCodec
from strongroom.client.snapshots.errors import SnapshotError
from strongroom.client.snapshots.keys import Identity, RepositoryKey
from strongroom.client.snapshots.manifest import Manifest
from strongroom.client.snapshots.pack import PackInfo, open_data_key, read_table
from strongroom.client.snapshots.restore import Fetch, check_paths, fetch_exact


@attrs.frozen
class CheckReport:
    packs: int
    chunks: int
    problems: tuple[str, ...]
    damaged_files: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _users(manifest: Manifest) -> dict[bytes, set[str]]:
    """For each chunk id, the names of the files holding it (hard links included)."""
    users: dict[bytes, set[str]] = defaultdict(set)
    files = {e.path: e for e in manifest.entries if e.kind == "file"}
    for entry in manifest.entries:
        source = files.get(entry.target or b"") if entry.kind == "hardlink" else entry
        for cid in source.chunks if source is not None else ():
            users[cid].add(entry.name)
    return users


def _structure(manifest: Manifest) -> list[str]:
    problems = []
    try:
        check_paths(manifest)
    except SnapshotError as error:
        problems.append(str(error))
    by_path = manifest.by_path()
    for entry in manifest.entries:
        if entry.kind == "file":
            total = sum(manifest.locations[c].raw_length for c in entry.chunks)
            if total != entry.size:
                problems.append(f"{entry.name}: chunks hold {total} bytes, size is {entry.size}")
        elif entry.kind == "hardlink":
            first = by_path.get(entry.target or b"")
            if first is None or first.kind != "file":
                problems.append(f"{entry.name}: hard link to a missing file")
        elif entry.kind == "symlink" and entry.target is None:
            problems.append(f"{entry.name}: symbolic link without a target")
    return problems


def _read_pack(
    pack: PackInfo,
    manifest: Manifest,
    key: RepositoryKey,
    identity: Identity,
    fetch: Fetch,
    read_data: bool,
) -> tuple[list[bytes], str | None]:
    """The chunk ids found damaged in a pack, or a problem that spoils the whole pack."""
    codec = BlobCodec()
    try:
        if not read_data:
            open_data_key(fetch_exact(fetch, pack, 0, pack.header_length), identity)
            return [], None
        data = fetch_exact(fetch, pack, 0, pack.length)
        aead = open_data_key(data[: pack.header_length], identity)
        table = read_table(data, aead)
    except SnapshotError as error:
        return [], f"pack {pack.id}: {error}"
    damaged = []
    listed = {}
    view = memoryview(data)
    for cid, offset, length, raw in table:
        listed[cid] = (offset, length, raw)
        try:
            chunk = codec.decode(aead, cid, view[offset : offset + length], key.chunk_id_key)
            if len(chunk) != raw:
                damaged.append(cid)
        except SnapshotError:
            damaged.append(cid)
    for cid, loc in manifest.locations.items():
        if loc.pack.id == pack.id and listed.get(cid) != (loc.offset, loc.length, loc.raw_length):
            damaged.append(cid)
    return damaged, None


def check(
    manifest: Manifest,
    key: RepositoryKey,
    identity: Identity,
    fetch: Fetch,
    read_data: bool = False,
) -> CheckReport:
    """Checks the snapshot; ``read_data`` downloads and verifies every referenced pack whole."""
    problems = _structure(manifest)
    users = _users(manifest)
    damaged: set[str] = set()
    packs = manifest.packs()
    for pack in packs.values():
        bad_chunks, spoiled = _read_pack(pack, manifest, key, identity, fetch, read_data)
        if spoiled is not None:
            problems.append(spoiled)
            for cid, loc in manifest.locations.items():
                if loc.pack.id == pack.id:
                    damaged |= users[cid]
        for cid in dict.fromkeys(bad_chunks):
            if cid in users:
                problems.append(f"pack {pack.id}: chunk {cid.hex()} is damaged")
                damaged |= users[cid]
    return CheckReport(
        packs=len(packs),
        chunks=len(manifest.locations),
        problems=tuple(problems),
        damaged_files=tuple(sorted(damaged, key=os.fsencode)),
    )
