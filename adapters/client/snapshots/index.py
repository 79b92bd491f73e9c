"""The index of a run: where each chunk of its new packs is, sealed under the index key.

A holder of the repository key (a write-only worker) reads every index to know which chunks
are stored already; an index holds chunk ids and byte ranges, never a file name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import zstandard

from strongroom.client.snapshots.crypto import Aead
from strongroom.client.snapshots.errors import FormatError
from strongroom.client.snapshots.keys import RepositoryKey
from strongroom.client.snapshots.pack import ChunkLocation, PackInfo
from strongroom.client.snapshots.tables import dump_tables, load_tables

INDEX_MAGIC = b"SRIX"
INDEX_VERSION = 1
ALGORITHM_AES_256_GCM = 1
_PREFIX = INDEX_MAGIC + bytes([INDEX_VERSION, ALGORITHM_AES_256_GCM])
_MAX_DOCUMENT = 1 << 30


def encode_index(
    key: RepositoryKey, chunks: Iterable[tuple[bytes, ChunkLocation]], nonce: bytes | None = None
) -> bytes:
    """The sealed index of ``chunks``."""
    packs, rows, _ = dump_tables(chunks)
    document = json.dumps({"packs": packs, "chunks": rows}, separators=(",", ":")).encode()
    compressed = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(document)
    return _PREFIX + Aead(key.index_key).seal(compressed, _PREFIX, nonce)


def decode_index(key: RepositoryKey, data: bytes) -> list[tuple[bytes, ChunkLocation]]:
    """The (chunk id, location) rows of a sealed index."""
    if data[:4] != INDEX_MAGIC:
        raise FormatError("not an index")
    if data[: len(_PREFIX)] != _PREFIX:
        raise FormatError(f"index version {data[4]} algorithm {data[5]} not supported")
    compressed = Aead(key.index_key).open(memoryview(data)[len(_PREFIX) :], _PREFIX)
    try:
        plain = zstandard.ZstdDecompressor().decompress(compressed, max_output_size=_MAX_DOCUMENT)
        document = json.loads(plain)
    except (zstandard.ZstdError, ValueError) as error:
        raise FormatError(f"index does not decode: {error}") from error
    return load_tables(document)


class Catalog:
    """The chunks a backup stores (from its indexes), and where: what dedup consults."""

    def __init__(self, rows: Iterable[tuple[bytes, ChunkLocation]] = ()) -> None:
        self._rows: dict[bytes, ChunkLocation] = {}
        self.update(rows)

    @classmethod
    def from_indexes(cls, key: RepositoryKey, indexes: Iterable[bytes]) -> Catalog:
        catalog = cls()
        for data in indexes:
            catalog.update(decode_index(key, data))
        return catalog

    def update(self, rows: Iterable[tuple[bytes, ChunkLocation]]) -> None:
        for cid, loc in rows:
            self._rows.setdefault(cid, loc)

    def get(self, cid: bytes) -> ChunkLocation | None:
        return self._rows.get(cid)

    def __contains__(self, cid: object) -> bool:
        return cid in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._rows)

    def pack_ids(self) -> set[str]:
        return {loc.pack.id for loc in self._rows.values()}

    def packs(self) -> set[PackInfo]:
        return {loc.pack for loc in self._rows.values()}
