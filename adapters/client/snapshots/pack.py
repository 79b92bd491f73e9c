"""Packs: many sealed blobs in one object, each pack under its own data key.

Layout (docs/format.md, "Pack"): ``SRPK``, version, algorithm, the length of the sealed data
key (u32 BE) and the data key sealed to the recipients (an age file); then the blobs, back
to back; then the pack table sealed under the data key; then the table's length (u32 BE)
and ``SRPE``. A holder of the repository key alone can write packs but never open one.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Sequence
from typing import NamedTuple

import attrs

from strongroom.client.snapshots.crypto import Aead, BlobCodec
from strongroom.client.snapshots.errors import FormatError
from strongroom.client.snapshots.keys import KEY_SIZE, Identity, seal, unseal

PACK_MAGIC = b"SRPK"
PACK_END_MAGIC = b"SRPE"
PACK_VERSION = 1
ALGORITHM_AES_256_GCM = 1
PREFIX_SIZE = 10  # magic, version, algorithm, sealed key length
TABLE_AAD = b"SRPT"
_TABLE_ENTRY = struct.Struct(">32sQII")  # chunk id, offset, length, raw length
_END = struct.Struct(">I4s")


@attrs.frozen
class PackInfo:
    """What a reader needs to reach into a pack: its id, header length and total length."""

    id: str
    header_length: int
    length: int


class ChunkLocation(NamedTuple):
    """Where a chunk's blob is: pack, byte offset and blob length, and the chunk's size (a
    named tuple: indexes and manifests hold one per chunk)."""

    pack: PackInfo
    offset: int
    length: int
    raw_length: int


@attrs.frozen
class Pack:
    """A finished pack: its id (the SHA-256 of its bytes, hex) and its bytes."""

    info: PackInfo
    data: bytes
    chunks: tuple[tuple[bytes, ChunkLocation], ...]


class PackBuilder:
    """Gathers blobs under a fresh data key; the key is sealed to the recipients and forgotten."""

    def __init__(
        self,
        recipients: Sequence[str],
        codec: BlobCodec,
        data_key: bytes | None = None,
        sealed_key: bytes | None = None,
    ) -> None:
        key = secrets.token_bytes(KEY_SIZE) if data_key is None else data_key
        sealed = seal(key, recipients) if sealed_key is None else sealed_key
        self._aead = Aead(key)
        self._codec = codec
        prefix = PACK_MAGIC + bytes([PACK_VERSION, ALGORITHM_AES_256_GCM])
        self._buf = bytearray(prefix + struct.pack(">I", len(sealed)) + sealed)
        self.header_length = len(self._buf)
        self._entries: list[tuple[bytes, int, int, int]] = []

    @property
    def size(self) -> int:
        return len(self._buf)

    @property
    def empty(self) -> bool:
        return not self._entries

    def add(
        self, cid: bytes, data: bytes | memoryview, nonce: bytes | None = None
    ) -> tuple[int, int]:
        """Compresses and seals a chunk into the pack; returns the blob's offset and length."""
        return self.add_plaintext(cid, self._codec.compress(data), len(data), nonce)

    def add_plaintext(
        self, cid: bytes, plaintext: bytes, raw_length: int, nonce: bytes | None = None
    ) -> tuple[int, int]:
        """Seals a blob plaintext (``BlobCodec.compress``'s) into the pack."""
        blob = self._aead.seal(plaintext, cid, nonce)
        offset = len(self._buf)
        self._buf += blob
        self._entries.append((cid, offset, len(blob), raw_length))
        return offset, len(blob)

    def finish(self, table_nonce: bytes | None = None) -> Pack:
        table = b"".join(_TABLE_ENTRY.pack(*entry) for entry in self._entries)
        sealed_table = self._aead.seal(table, TABLE_AAD, table_nonce)
        self._buf += sealed_table + _END.pack(len(sealed_table), PACK_END_MAGIC)
        data = bytes(self._buf)
        info = PackInfo(hashlib.sha256(data).hexdigest(), self.header_length, len(data))
        chunks = tuple(
            (cid, ChunkLocation(info, offset, length, raw))
            for cid, offset, length, raw in self._entries
        )
        self._buf = bytearray()
        return Pack(info, data, chunks)


def header_length(prefix: bytes) -> int:
    """The length of a pack's header, from its first 10 bytes."""
    if len(prefix) < PREFIX_SIZE or prefix[:4] != PACK_MAGIC:
        raise FormatError("not a pack")
    if prefix[4] != PACK_VERSION or prefix[5] != ALGORITHM_AES_256_GCM:
        raise FormatError(f"pack version {prefix[4]} algorithm {prefix[5]} not supported")
    (sealed_length,) = struct.unpack(">I", prefix[6:PREFIX_SIZE])
    return PREFIX_SIZE + int(sealed_length)


def open_data_key(header: bytes, identity: Identity) -> Aead:
    """The AEAD of a pack, from its header (the first ``header_length`` bytes)."""
    length = header_length(header)
    if len(header) < length:
        raise FormatError("pack header truncated")
    key = unseal(header[PREFIX_SIZE:length], identity)
    if len(key) != KEY_SIZE:
        raise FormatError("pack data key has the wrong size")
    return Aead(key)


def read_table(pack: bytes, aead: Aead) -> list[tuple[bytes, int, int, int]]:
    """The pack table at the end of a whole pack: (chunk id, offset, length, raw length)."""
    if len(pack) < _END.size or pack[-4:] != PACK_END_MAGIC:
        raise FormatError("pack has no end marker")
    (table_length, _) = _END.unpack(pack[-_END.size :])
    start = len(pack) - _END.size - table_length
    if start < header_length(pack[:PREFIX_SIZE]):
        raise FormatError("pack table overlaps the header")
    table = aead.open(pack[start : len(pack) - _END.size], TABLE_AAD)
    if len(table) % _TABLE_ENTRY.size:
        raise FormatError("pack table has a partial entry")
    entries = [_TABLE_ENTRY.unpack_from(table, i) for i in range(0, len(table), _TABLE_ENTRY.size)]
    return [(bytes(e[0]), int(e[1]), int(e[2]), int(e[3])) for e in entries]
