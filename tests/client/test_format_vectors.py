"""docs/format.md's test vectors hold against the library: what a stranger decodes from
the document alone is what Strongroom writes and reads."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import blake3
import pytest
import zstandard

from strongroom.client.snapshots import (
    Catalog,
    RepositoryKey,
    SnapshotReader,
    decode_index,
    load_identity,
)
from strongroom.client.snapshots.chunker import cut_points
from strongroom.client.snapshots.crypto import Aead, BlobCodec, chunk_id
from strongroom.client.snapshots.keys import unseal
from strongroom.client.snapshots.pack import PackBuilder, header_length, open_data_key, read_table

FORMAT = Path(__file__).resolve().parents[2] / "docs" / "format.md"
TEXT_VALUES = {"identity", "recipient", "pack_id", "index_json", "manifest_json"}
TEXT_VALUES |= {"chunker_input_seed", "chunker_cut_points"}


def load_vectors() -> dict[str, str]:
    """The ``name = value`` lines of the document's ```vectors block (indented lines
    continue the value before them)."""
    block = re.search(r"```vectors\n(.*?)```", FORMAT.read_text(), re.DOTALL)
    assert block is not None, "docs/format.md has a vectors block"
    values: dict[str, str] = {}
    name = ""
    for line in block.group(1).splitlines():
        if line.startswith("    "):
            values[name] += line.strip()
        elif line.strip():
            name, _, value = line.partition(" = ")
            values[name] = value
    return values


V = load_vectors()


def hexv(name: str) -> bytes:
    return bytes.fromhex(V[name])


IDENTITY = load_identity(V["identity"])
KEY = RepositoryKey(hexv("chunk_id_key"), hexv("index_key"))


def test_the_document_has_every_vector() -> None:
    expected = {"chunk_id_key", "index_key", "sealed_repository_key", "content", "chunk_id"}
    expected |= {"data_key", "sealed_data_key"}
    expected |= {"blob_nonce", "table_nonce", "pack", "index_nonce", "index", "sealed_manifest"}
    expected |= {"zstd_content", "zstd_chunk_id", "zstd_blob", *TEXT_VALUES}
    assert set(V) == expected


def test_keys_and_chunk_ids() -> None:
    assert IDENTITY.recipient == V["recipient"]
    assert RepositoryKey.unseal(hexv("sealed_repository_key"), IDENTITY) == KEY
    assert chunk_id(KEY.chunk_id_key, hexv("content")) == hexv("chunk_id")
    assert blake3.blake3(hexv("content"), key=KEY.chunk_id_key).hexdigest() == V["chunk_id"]
    assert unseal(hexv("sealed_data_key"), IDENTITY) == hexv("data_key")


def test_the_pack_is_rebuilt_byte_for_byte_and_reads_back() -> None:
    builder = PackBuilder(
        [V["recipient"]],
        BlobCodec(),
        data_key=hexv("data_key"),
        sealed_key=hexv("sealed_data_key"),
    )
    builder.add(hexv("chunk_id"), hexv("content"), nonce=hexv("blob_nonce"))
    pack = builder.finish(table_nonce=hexv("table_nonce"))
    assert pack.data == hexv("pack")
    assert pack.info.id == V["pack_id"] == hashlib.sha256(hexv("pack")).hexdigest()
    data = hexv("pack")
    assert data[:6] == b"SRPK\x01\x01"
    assert data[-4:] == b"SRPE"
    length = header_length(data[:10])
    assert length == 10 + len(hexv("sealed_data_key"))
    table = read_table(data, open_data_key(data[:length], IDENTITY))
    assert table == [(hexv("chunk_id"), length, 12 + 1 + 18 + 16, 18)]


def test_the_index_decrypts_to_its_json() -> None:
    index = hexv("index")
    assert index[:6] == b"SRIX\x01\x01"
    assert index[6:18] == hexv("index_nonce")
    compressed = Aead(KEY.index_key).open(index[6:], index[:6])
    assert zstandard.ZstdDecompressor().decompress(compressed).decode() == V["index_json"]
    [(cid, loc)] = decode_index(KEY, index)
    assert cid == hexv("chunk_id")
    assert (loc.pack.id, loc.offset, loc.raw_length) == (
        V["pack_id"],
        10 + len(hexv("sealed_data_key")),
        18,
    )


def test_the_manifest_opens_to_its_json_and_the_snapshot_restores(tmp_path: Path) -> None:
    plaintext = unseal(hexv("sealed_manifest"), IDENTITY)
    assert plaintext[:5] == b"SRMF\x01"
    document = zstandard.ZstdDecompressor().decompress(plaintext[5:]).decode()
    assert document == V["manifest_json"]
    assert [e["path"] for e in json.loads(document)["entries"]] == [
        "",
        "d",
        "hello.txt",
        "l",
        "second-name",
    ]
    packs = {V["pack_id"]: hexv("pack")}
    reader = SnapshotReader(
        IDENTITY,
        hexv("sealed_repository_key"),
        hexv("sealed_manifest"),
        lambda pack, offset, length: packs[pack][offset : offset + length],
    )
    assert reader.check(read_data=True).ok
    reader.restore(tmp_path / "out")
    hello = tmp_path / "out" / "hello.txt"
    assert hello.read_bytes() == hexv("content")
    assert (tmp_path / "out" / "second-name").stat().st_ino == hello.stat().st_ino
    assert (tmp_path / "out" / "l").readlink() == Path("hello.txt")
    assert hello.stat().st_mtime_ns == 1_700_000_000_000_000_002
    assert (tmp_path / "out" / "d").stat().st_mode & 0o7777 == 0o700
    assert Catalog.from_indexes(KEY, [hexv("index")]).get(hexv("chunk_id")) is not None


def test_a_compressed_blob_decodes() -> None:
    blob = hexv("zstd_blob")
    plaintext = Aead(hexv("data_key")).open(blob, hexv("zstd_chunk_id"))
    assert plaintext[0] == 1
    content = BlobCodec().decode(
        Aead(hexv("data_key")), hexv("zstd_chunk_id"), blob, KEY.chunk_id_key
    )
    assert content == hexv("zstd_content")


def test_the_chunker_cuts_where_the_document_says() -> None:
    data = blake3.blake3(V["chunker_input_seed"].encode()).digest(length=8 << 20)
    assert cut_points(data) == [int(p) for p in V["chunker_cut_points"].split(",")]


@pytest.mark.parametrize("name", ["pack", "index", "sealed_manifest", "sealed_repository_key"])
def test_no_vector_object_holds_plaintext(name: str) -> None:
    for marker in (b"hello, strongroom", b"hello.txt", b"second-name", KEY.chunk_id_key):
        assert marker not in hexv(name)
