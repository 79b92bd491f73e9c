"""The primitives of the format: keyed chunk ids, blob sealing, object sealing.

Chunk ids are BLAKE3 in keyed mode under the repository's chunk-id key. Blobs and the
index are sealed with AES-256-GCM (96-bit random nonce, 128-bit tag). A blob's plaintext
is one encoding byte (0: stored, 1: a zstd frame) and the payload; its associated data is
its chunk id, so a blob cannot be passed off as another chunk.
"""

from __future__ import annotations

import secrets

import blake3
import zstandard
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from strongroom.client.snapshots.errors import FormatError, IntegrityError

CHUNK_ID_SIZE = 32
NONCE_SIZE = 12
TAG_SIZE = 16
ENCODING_STORED = 0
ENCODING_ZSTD = 1
# The format's upper bound on a chunk (the chunker's maximum); guards decompression.
MAX_CHUNK_SIZE = 4 << 20
DEFAULT_COMPRESSION_LEVEL = 3


def chunk_id(key: bytes, data: bytes | memoryview) -> bytes:
    """The keyed id of a chunk: without the key, nobody can confirm a guessed content."""
    return blake3.blake3(data, key=key).digest()


class Aead:
    """AES-256-GCM under one key, with the nonce stored in front of the ciphertext."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def seal(self, plaintext: bytes, aad: bytes, nonce: bytes | None = None) -> bytes:
        nonce = secrets.token_bytes(NONCE_SIZE) if nonce is None else nonce
        return nonce + self._aead.encrypt(nonce, plaintext, aad)

    def open(self, sealed: bytes | memoryview, aad: bytes) -> bytes:
        if len(sealed) < NONCE_SIZE + TAG_SIZE:
            raise IntegrityError("sealed object too short")
        data = bytes(sealed)
        try:
            return self._aead.decrypt(data[:NONCE_SIZE], data[NONCE_SIZE:], aad)
        except InvalidTag as error:
            raise IntegrityError("authentication tag does not match") from error


class BlobCodec:
    """Compresses and seals chunks into blobs, and back; not shared between threads."""

    def __init__(self, level: int = DEFAULT_COMPRESSION_LEVEL) -> None:
        self._compressor = zstandard.ZstdCompressor(level=level, write_content_size=True)
        self._decompressor = zstandard.ZstdDecompressor()

    def compress(self, data: bytes | memoryview) -> bytes:
        """A blob's plaintext: the encoding byte, then the zstd frame when it is smaller."""
        compressed = self._compressor.compress(data)
        if len(compressed) < len(data):
            return bytes([ENCODING_ZSTD]) + compressed
        return bytes([ENCODING_STORED]) + bytes(data)

    def encode(
        self, aead: Aead, cid: bytes, data: bytes | memoryview, nonce: bytes | None = None
    ) -> bytes:
        """The blob of a chunk: compressed when that makes it smaller, then sealed."""
        return aead.seal(self.compress(data), cid, nonce)

    def decode(self, aead: Aead, cid: bytes, blob: bytes | memoryview, id_key: bytes) -> bytes:
        """The chunk of a blob, after checking its tag and that its keyed hash is ``cid``."""
        plaintext = aead.open(blob, cid)
        if not plaintext:
            raise FormatError("empty blob plaintext")
        if plaintext[0] == ENCODING_ZSTD:
            try:
                data = self._decompressor.decompress(plaintext[1:], max_output_size=MAX_CHUNK_SIZE)
            except zstandard.ZstdError as error:
                raise IntegrityError("blob does not decompress") from error
        elif plaintext[0] == ENCODING_STORED:
            data = plaintext[1:]
        else:
            raise FormatError(f"unknown blob encoding {plaintext[0]}")
        if chunk_id(id_key, data) != cid:
            raise IntegrityError("chunk does not match its id")
        return data
