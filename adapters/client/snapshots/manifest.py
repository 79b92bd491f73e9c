"""The manifest of a snapshot: its tree and where each file's chunks are, sealed to the
recipients (names and structure are as secret as contents).

Plaintext: ``SRMF``, a version byte, then one zstd frame of UTF-8 JSON (docs/format.md).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs
import zstandard

from strongroom.client.snapshots.errors import FormatError
from strongroom.client.snapshots.keys import Identity, seal, unseal
from strongroom.client.snapshots.pack import ChunkLocation, PackInfo
from strongroom.client.snapshots.tables import dump_tables, load_tables

MANIFEST_MAGIC = b"SRMF"
MANIFEST_VERSION = 1
KINDS = ("dir", "file", "symlink", "hardlink")
_MAX_DOCUMENT = 1 << 31


class Entry(NamedTuple):
    """One name of the tree. ``path`` is relative (``b""`` is the root), ``/``-separated.
    A named tuple: a manifest decodes tens of thousands of them.

    ``target`` is a symlink's target, or for a hard link the path of the first name of
    its file (whose entry holds size and chunks). ``mode`` is ``st_mode & 0o7777``.
    """

    path: bytes
    kind: str
    mode: int
    mtime_ns: int
    uid: int = 0
    gid: int = 0
    size: int = 0
    chunks: tuple[bytes, ...] = ()
    target: bytes | None = None
    xattrs: tuple[tuple[str, bytes], ...] = ()

    @property
    def name(self) -> str:
        """The path for display (undecodable bytes as surrogate escapes)."""
        return os.fsdecode(self.path)


@attrs.frozen
class Manifest:
    """A decoded snapshot: its entries in tree order and the chunk locations they use."""

    created_ns: int
    entries: tuple[Entry, ...]
    locations: Mapping[bytes, ChunkLocation]

    def packs(self) -> dict[str, PackInfo]:
        return {loc.pack.id: loc.pack for loc in self.locations.values()}

    def by_path(self) -> dict[bytes, Entry]:
        return {e.path: e for e in self.entries}

    def file_chunks(self, entry: Entry) -> tuple[bytes, ...]:
        """The chunks of a file or of a hard link's first name."""
        if entry.kind == "hardlink":
            first = self.by_path().get(entry.target or b"")
            return first.chunks if first else ()
        return entry.chunks


def _put_bytes(out: dict[str, Any], field: str, value: bytes) -> None:
    try:
        out[field] = value.decode("utf-8")
    except UnicodeDecodeError:
        out[field + "_b64"] = base64.b64encode(value).decode()


def _get_bytes(raw: Mapping[str, Any], field: str) -> bytes | None:
    if field in raw:
        return str(raw[field]).encode("utf-8")
    if field + "_b64" in raw:
        return base64.b64decode(raw[field + "_b64"], validate=True)
    return None


def _dump_entry(entry: Entry, rows: Mapping[bytes, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put_bytes(out, "path", entry.path)
    out.update(kind=entry.kind, mode=entry.mode, uid=entry.uid, gid=entry.gid)
    out["mtime_ns"] = entry.mtime_ns
    if entry.kind == "file":
        out["size"] = entry.size
        out["chunks"] = [rows[c] for c in entry.chunks]
    if entry.target is not None:
        _put_bytes(out, "target", entry.target)
    if entry.xattrs:
        out["xattrs"] = [[k, base64.b64encode(v).decode()] for k, v in entry.xattrs]
    return out


def _load_entry(raw: Mapping[str, Any], ids: Sequence[bytes]) -> Entry:
    path = _get_bytes(raw, "path")
    kind = raw["kind"]
    if path is None or kind not in KINDS:
        raise FormatError("entry without a path or with an unknown kind")
    return Entry(
        path=path,
        kind=kind,
        mode=int(raw["mode"]),
        mtime_ns=int(raw["mtime_ns"]),
        uid=int(raw.get("uid", 0)),
        gid=int(raw.get("gid", 0)),
        size=int(raw.get("size", 0)),
        chunks=tuple(ids[int(i)] for i in raw.get("chunks", ())),
        target=_get_bytes(raw, "target"),
        xattrs=tuple(
            (str(k), base64.b64decode(v, validate=True)) for k, v in raw.get("xattrs", ())
        ),
    )


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest's plaintext (before sealing)."""
    locations = manifest.locations
    used: list[tuple[bytes, ChunkLocation]] = [
        (c, locations[c]) for e in manifest.entries for c in e.chunks
    ]
    packs, chunk_rows, rows = dump_tables(used)
    document = {
        "version": MANIFEST_VERSION,
        "created_ns": manifest.created_ns,
        "packs": packs,
        "chunks": chunk_rows,
        "entries": _dump_entries(manifest.entries, rows),
    }
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    frame = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(text)
    return MANIFEST_MAGIC + bytes([MANIFEST_VERSION]) + frame


def _dump_entries(entries: Sequence[Entry], rows: Mapping[bytes, int]) -> list[dict[str, Any]]:
    """``_dump_entry`` of each entry, in one loop (the common case, a plain file or
    directory with a UTF-8 name and no xattrs, without a call per name)."""
    out: list[dict[str, Any]] = []
    append, row = out.append, rows.__getitem__
    for e in entries:
        if e.target is not None or e.xattrs:
            append(_dump_entry(e, rows))
            continue
        try:
            path = e.path.decode("utf-8")
        except UnicodeDecodeError:
            append(_dump_entry(e, rows))
            continue
        if e.kind == "file":
            append(
                {
                    "path": path,
                    "kind": "file",
                    "mode": e.mode,
                    "uid": e.uid,
                    "gid": e.gid,
                    "mtime_ns": e.mtime_ns,
                    "size": e.size,
                    "chunks": list(map(row, e.chunks)),
                }
            )
        else:
            append(
                {
                    "path": path,
                    "kind": e.kind,
                    "mode": e.mode,
                    "uid": e.uid,
                    "gid": e.gid,
                    "mtime_ns": e.mtime_ns,
                }
            )
    return out


def decode_manifest(plaintext: bytes) -> Manifest:
    """A manifest from its plaintext."""
    if plaintext[:4] != MANIFEST_MAGIC:
        raise FormatError("not a manifest")
    if plaintext[4:5] != bytes([MANIFEST_VERSION]):
        raise FormatError(f"manifest version {plaintext[4]} is not supported")
    try:
        text = zstandard.ZstdDecompressor().decompress(plaintext[5:], max_output_size=_MAX_DOCUMENT)
        document = json.loads(text)
        rows = load_tables(document)
        ids = [cid for cid, _ in rows]
        entries = tuple(_load_entry(raw, ids) for raw in document["entries"])
        created = int(document["created_ns"])
    except (zstandard.ZstdError, ValueError, KeyError, TypeError, IndexError) as error:
        raise FormatError(f"manifest does not decode: {error}") from error
    return Manifest(created, entries, dict(rows))


def seal_manifest(manifest: Manifest, recipients: Sequence[str]) -> bytes:
    return seal(encode_manifest(manifest), recipients)


def open_manifest(sealed: bytes, identity: Identity) -> Manifest:
    return decode_manifest(unseal(sealed, identity))


def make_manifest(
    created_ns: int, entries: Iterable[Entry], locations: Mapping[bytes, ChunkLocation]
) -> Manifest:
    entries = tuple(entries)
    used = {c: locations[c] for e in entries for c in e.chunks}
    return Manifest(created_ns, entries, used)
