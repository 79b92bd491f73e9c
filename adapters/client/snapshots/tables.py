"""The JSON shapes shared by the index and the manifest: a pack table and a chunk table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from strongroom.client.snapshots.crypto import CHUNK_ID_SIZE
from strongroom.client.snapshots.errors import FormatError
from strongroom.client.snapshots.pack import ChunkLocation, PackInfo


def dump_tables(
    chunks: Iterable[tuple[bytes, ChunkLocation]],
) -> tuple[list[dict[str, Any]], list[list[Any]], dict[bytes, int]]:
    """The pack table, the chunk table and each chunk id's row number."""
    packs: dict[str, int] = {}
    pack_rows: list[dict[str, Any]] = []
    chunk_rows: list[list[Any]] = []
    rows: dict[bytes, int] = {}
    for cid, loc in chunks:
        if cid in rows:
            continue
        number = packs.get(loc.pack.id)
        if number is None:
            number = packs[loc.pack.id] = len(pack_rows)
            pack_rows.append(
                {
                    "id": loc.pack.id,
                    "header_length": loc.pack.header_length,
                    "length": loc.pack.length,
                }
            )
        rows[cid] = len(chunk_rows)
        chunk_rows.append([cid.hex(), number, loc.offset, loc.length, loc.raw_length])
    return pack_rows, chunk_rows, rows


def load_tables(document: Mapping[str, Any]) -> list[tuple[bytes, ChunkLocation]]:
    """The (chunk id, location) rows of a decoded index or manifest document."""
    try:
        packs = [
            PackInfo(str(p["id"]), int(p["header_length"]), int(p["length"]))
            for p in document["packs"]
        ]
        rows = []
        for cid_hex, number, offset, length, raw in document["chunks"]:
            cid = bytes.fromhex(cid_hex)
            if len(cid) != CHUNK_ID_SIZE:
                raise FormatError("chunk id of the wrong size")
            rows.append((cid, ChunkLocation(packs[number], int(offset), int(length), int(raw))))
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise FormatError(f"malformed chunk tables: {error}") from error
    return rows
