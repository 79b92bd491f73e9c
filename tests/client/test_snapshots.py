"""The snapshot format end to end, on the library alone (no server): a tree written by the
writer comes back bit for bit from the reader; unchanged data is not written twice; what
a write-only worker holds opens nothing; no plaintext leaves the client; partial restore
fetches only what it needs; check --read-data names the files a damaged pack affects."""

from __future__ import annotations

import json
import os
import random
import stat
import tempfile
from pathlib import Path

import attrs
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strongroom.client.snapshots import (
    Catalog,
    Identity,
    IntegrityError,
    LocalCache,
    RepositoryKey,
    SnapshotKeyError,
    SnapshotReader,
    SnapshotWrite,
    WriteOptions,
    diff,
    generate_identity,
    load_identity,
    open_manifest,
    write_snapshot,
)
from strongroom.client.snapshots.crypto import Aead
from strongroom.client.snapshots.index import decode_index
from strongroom.client.snapshots.pack import PREFIX_SIZE, open_data_key
from support.trees import xattrs_supported

MIB = 1 << 20
IDENTITY, _ = generate_identity()
RECIPIENTS = [IDENTITY.recipient]
KEY = RepositoryKey.generate()


@attrs.define
class Store:
    """What the service would hold: packs by id; and a log of every range fetched."""

    packs: dict[str, bytes] = attrs.field(factory=dict)
    fetched: list[tuple[str, int, int]] = attrs.field(factory=list)

    def put(self, pack: object) -> None:
        info = pack.info  # type: ignore[attr-defined]
        assert info.id not in self.packs
        self.packs[info.id] = pack.data  # type: ignore[attr-defined]

    def fetch(self, pack_id: str, offset: int, length: int) -> bytes:
        self.fetched.append((pack_id, offset, length))
        return self.packs[pack_id][offset : offset + length]


def backup(
    root: Path,
    store: Store,
    indexes: list[bytes],
    cache: LocalCache | None = None,
    options: WriteOptions | None = None,
) -> SnapshotWrite:
    written = write_snapshot(
        root,
        repository_key=KEY,
        recipients=RECIPIENTS,
        catalog=Catalog.from_indexes(KEY, indexes),
        emit_pack=store.put,
        cache=cache,
        options=options,
    )
    indexes.append(written.index)
    return written


def reader(store: Store, written: SnapshotWrite) -> SnapshotReader:
    return SnapshotReader(IDENTITY, KEY.seal(RECIPIENTS), written.manifest, store.fetch)


def describe(root: Path) -> dict[bytes, tuple[object, ...]]:
    """Everything restore must keep, per relative path (hard links as inode groups)."""
    out: dict[bytes, tuple[object, ...]] = {}
    inodes: dict[int, bytes] = {}
    base = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [b"", *dirnames, *filenames] if dirpath == base else [*dirnames, *filenames]:
            path = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.relpath(path, base)
            s = os.lstat(path)
            xattrs = sorted(
                (n, os.getxattr(path, n, follow_symlinks=False))
                for n in os.listxattr(path, follow_symlinks=False)
            )
            if stat.S_ISLNK(s.st_mode):
                out[rel] = ("link", os.readlink(path), s.st_mtime_ns)
            elif stat.S_ISDIR(s.st_mode):
                out[rel] = ("dir", s.st_mode, s.st_mtime_ns, xattrs)
            else:
                first = inodes.setdefault(s.st_ino, rel)
                content = Path(os.fsdecode(path)).read_bytes()
                out[rel] = ("file", s.st_mode, s.st_mtime_ns, content, xattrs, first, s.st_nlink)
    return out


def every_kind_tree(root: Path, markers: bool = False) -> None:
    """A tree with each kind of entry the contract names."""
    (root / "docs" / "deep" / "deeper").mkdir(parents=True)
    (root / "empty-dir").mkdir()
    (root / "docs" / "letter.txt").write_text("secret-content-marker-ALPHA " * 200)
    (root / "docs" / "random.bin").write_bytes(os.urandom(3 * MIB + 17))
    (root / "docs" / "empty").write_bytes(b"")
    (root / "docs" / "deep" / "deeper" / "name-marker-BRAVO.txt").write_text("x")
    os.link(root / "docs" / "letter.txt", root / "hardlink-to-letter")
    os.symlink("docs/letter.txt", root / "relative-link")
    os.symlink("/nonexistent/target", root / "dangling-link")
    (root / os.fsdecode(b"latin-\xe9-name")).write_bytes(b"not utf-8 name")
    (root / "readonly").write_bytes(b"r")
    (root / "readonly").chmod(0o444)
    (root / "script").write_bytes(b"#!/bin/sh\n")
    (root / "script").chmod(0o750)
    (root / "docs" / "deep").chmod(0o711)
    if xattrs_supported(root):
        os.setxattr(root / "docs" / "letter.txt", "user.comment", b"xattr-marker-CHARLIE")
        os.setxattr(root / "docs", "user.dir", b"\x00\x01")
    for i, path in enumerate(sorted(root.rglob("*"), reverse=True)):
        os.utime(
            path,
            ns=(1_600_000_000_123_456_789 + i, 1_600_000_000_123_456_789 + i),
            follow_symlinks=False,
        )
    os.utime(root, ns=(1_500_000_000_000_000_001, 1_500_000_000_000_000_001))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    every_kind_tree(root)
    return root


def test_round_trip_is_bit_for_bit(tree: Path, tmp_path: Path) -> None:
    store = Store()
    written = backup(tree, store, [])
    stats = reader(store, written).restore(tmp_path / "out")
    assert describe(tmp_path / "out") == describe(tree)
    assert stats.files == len([e for e in reader(store, written).ls() if e.kind == "file"])


def test_an_age_keygen_identity_file_works(tree: Path) -> None:
    """A key file as age-keygen writes it (comments, then the secret line) opens a snapshot
    sealed to its recipient among others."""
    identity = load_identity(generate_identity()[1])
    both = [identity.recipient, IDENTITY.recipient]
    store = Store()
    written = write_snapshot(
        tree, repository_key=KEY, recipients=both, catalog=Catalog(), emit_pack=store.put
    )
    opened = SnapshotReader(identity, KEY.seal(both), written.manifest, store.fetch)
    assert [e.name for e in opened.ls("docs/deep")] == [
        "docs/deep",
        "docs/deep/deeper",
        "docs/deep/deeper/name-marker-BRAVO.txt",
    ]


names = st.binary(min_size=1, max_size=6).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")
)


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, bytes, bytes, int, int]]:
    """(kind, relative path, content or target, mode, mtime) rows of a random tree."""
    rows: list[tuple[str, bytes, bytes, int, int]] = []
    dirs = [b""]
    used: set[bytes] = set()
    for _ in range(draw(st.integers(1, 12))):
        parent = draw(st.sampled_from(dirs))
        name = draw(names)
        path = parent + b"/" + name if parent else name
        if path in used:
            continue
        used.add(path)
        kind = draw(st.sampled_from(["dir", "file", "file", "symlink", "hardlink"]))
        mtime = draw(st.integers(0, 2**62))
        if kind == "dir":
            dirs.append(path)
            rows.append(
                (kind, path, b"", draw(st.sampled_from([0o755, 0o700, 0o750, 0o1777])), mtime)
            )
        elif kind == "file":
            content = draw(st.one_of(st.binary(max_size=300), st.just(b"z" * 300_000)))
            rows.append(
                (
                    kind,
                    path,
                    content,
                    draw(st.sampled_from([0o644, 0o600, 0o755, 0o400, 0o4755])),
                    mtime,
                )
            )
        elif kind == "symlink":
            rows.append((kind, path, draw(names), 0o777, mtime))
        else:
            files = [r[1] for r in rows if r[0] == "file"]
            if files:
                rows.append((kind, path, draw(st.sampled_from(files)), 0, mtime))
    return rows


def build(root: Path, rows: list[tuple[str, bytes, bytes, int, int]]) -> None:
    base = os.fsencode(root)
    for kind, path, data, _, _ in rows:
        full = base + b"/" + path
        if kind == "dir":
            os.mkdir(full)
        elif kind == "file":
            with open(full, "wb") as f:
                f.write(data)
        elif kind == "symlink":
            os.symlink(data, full)
        else:
            os.link(base + b"/" + data, full)
    for kind, path, _, mode, mtime in reversed(rows):
        full = base + b"/" + path
        if kind in ("dir", "file"):
            os.chmod(full, mode)
        os.utime(full, ns=(mtime, mtime), follow_symlinks=False)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(rows=trees(), xattr_values=st.lists(st.binary(max_size=40), max_size=4))
def test_generated_trees_round_trip(
    rows: list[tuple[str, bytes, bytes, int, int]], xattr_values: list[bytes]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        src, out = Path(scratch) / "src", Path(scratch) / "out"
        src.mkdir()
        build(src, rows)
        if xattrs_supported(Path(scratch)):
            carriers = [r[1] for r in rows if r[0] in ("dir", "file")]
            for path, value in zip(carriers, xattr_values, strict=False):
                os.setxattr(os.fsencode(src) + b"/" + path, "user.generated", value)
        store = Store()
        written = backup(src, store, [])
        reader(store, written).restore(out)
        assert describe(out) == describe(src)


def test_a_second_run_of_an_unchanged_tree_writes_no_chunk(tree: Path) -> None:
    store, indexes = Store(), []
    first = backup(tree, store, indexes)
    packs = dict(store.packs)
    with_cache = backup(tree, store, indexes, cache=first.cache)
    without_cache = backup(tree, store, indexes)
    assert store.packs == packs
    assert with_cache.new_packs == without_cache.new_packs == ()
    assert with_cache.stats.chunks_new == without_cache.stats.chunks_new == 0
    assert with_cache.stats.bytes_read == 0, "the cache skips reading unchanged files"
    assert with_cache.stats.files_unchanged == with_cache.stats.files
    assert set(with_cache.references) == set(packs)
    assert diff(reader(store, first).manifest, reader(store, with_cache).manifest) == []


def test_the_local_cache_kept_on_disk_skips_unchanged_files_and_rereads_a_touched_one(
    tree: Path,
) -> None:
    store, indexes = Store(), []
    first = backup(tree, store, indexes)
    saved = LocalCache.from_bytes(first.cache.to_bytes())  # as a push keeps it between runs
    again = backup(tree, store, indexes, cache=saved)
    assert again.stats.bytes_read == 0
    assert again.stats.files_unchanged == again.stats.files
    touched = next(
        p
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.stat().st_nlink == 1 and p.stat().st_size
    )
    os.chmod(touched, stat.S_IMODE(touched.stat().st_mode))  # ctime moves, nothing else
    third = backup(tree, store, indexes, cache=LocalCache.from_bytes(again.cache.to_bytes()))
    assert third.stats.files_unchanged == third.stats.files - 1
    assert third.stats.bytes_read == touched.stat().st_size
    assert third.stats.chunks_new == 0


def test_a_local_cache_of_version_1_still_skips_unchanged_files(tree: Path) -> None:
    store, indexes = Store(), []
    first = backup(tree, store, indexes)
    version_1 = {
        "version": 1,
        "files": [
            [os.fsdecode(path), f.size, f.mtime_ns, f.inode, [c.hex() for c in f.chunks]]
            for path, f in first.cache.files.items()
        ],
    }
    data = zstandard.ZstdCompressor().compress(json.dumps(version_1).encode())
    second = backup(tree, store, indexes, cache=LocalCache.from_bytes(data))
    assert second.stats.bytes_read == 0
    assert second.stats.files_unchanged == second.stats.files
    assert LocalCache.from_bytes(b"not a cache").get(b"anything") is None


def test_an_edit_in_the_middle_of_a_large_file_writes_about_one_chunk(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    big = root / "big.bin"
    big.write_bytes(random.Random(24).randbytes(24 * MIB))  # fixed: the cut points too
    store, indexes = Store(), []
    first = backup(root, store, indexes)
    with open(big, "r+b") as f:
        f.seek(11 * MIB)
        f.write(b"an edit in the middle")
    second = backup(root, store, indexes, cache=first.cache)
    assert first.stats.chunks_new >= 10
    assert 1 <= second.stats.chunks_new <= 2
    assert second.stats.bytes_packed < 9 * MIB
    changes = diff(reader(store, first).manifest, reader(store, second).manifest)
    assert [(c.path, c.change) for c in changes] == [("big.bin", "modified")]
    second_reader = reader(store, second)
    second_reader.restore(tmp_path / "out")
    assert (tmp_path / "out" / "big.bin").read_bytes() == big.read_bytes()


def test_what_a_write_only_worker_holds_opens_nothing_stored(tree: Path) -> None:
    """With the repository key and the recipients (the worker's config) and everything the
    service stores, neither contents nor names nor pack keys come out."""
    store, indexes = Store(), []
    written = backup(tree, store, indexes)
    sealed_key = KEY.seal(RECIPIENTS)
    worker_guess = Identity(generate_identity()[0].secret)
    with pytest.raises(SnapshotKeyError):
        open_manifest(written.manifest, worker_guess)
    with pytest.raises(SnapshotKeyError):
        RepositoryKey.unseal(sealed_key, worker_guess)
    for data in store.packs.values():
        with pytest.raises(SnapshotKeyError):
            open_data_key(data[: PREFIX_SIZE + 4096], worker_guess)
    # The blobs do not open under either half of the repository key.
    for cid, loc in decode_index(KEY, written.index):
        blob = store.packs[loc.pack.id][loc.offset : loc.offset + loc.length]
        for candidate in (KEY.chunk_id_key, KEY.index_key):
            with pytest.raises(IntegrityError):
                Aead(candidate).open(blob, cid)
    # The index the worker can read holds chunk ids and ranges, no name and no content.
    index_rows = repr(decode_index(KEY, written.index)).encode()
    for marker in (b"name-marker-BRAVO", b"letter", b"secret-content-marker-ALPHA"):
        assert marker not in index_rows


def test_no_plaintext_leaves_the_client(tree: Path) -> None:
    store, indexes = Store(), []
    written = backup(tree, store, indexes)
    uploaded = [*store.packs.values(), written.index, written.manifest, KEY.seal(RECIPIENTS)]
    markers = [
        b"secret-content-marker-ALPHA",
        b"name-marker-BRAVO",
        b"xattr-marker-CHARLIE",
        b"letter.txt",
        b"docs/",
        b"latin-\xe9-name",
        b"not utf-8 name",
        b"/nonexistent/target",
        KEY.chunk_id_key,
        KEY.index_key,
    ]
    for obj in uploaded:
        for marker in markers:
            assert marker not in obj
            assert marker.hex().encode() not in obj


def test_partial_restore_fetches_only_the_ranges_it_needs(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for i in range(12):
        (root / f"file-{i:02}").write_bytes(os.urandom(MIB))
    store = Store()
    written = backup(root, store, [], options=WriteOptions(pack_size=4 * MIB))
    assert len(store.packs) >= 3
    opened = reader(store, written)
    stats = opened.restore(tmp_path / "out", include=["file-07"])
    wanted = opened.manifest.by_path()[b"file-07"]
    locs = [opened.manifest.locations[c] for c in wanted.chunks]
    assert {p for p, _, _ in store.fetched} == {loc.pack.id for loc in locs}
    headers = {loc.pack.id: loc.pack.header_length for loc in locs}
    needed = sum(loc.length for loc in locs) + sum(headers.values())
    assert stats.bytes_fetched == sum(n for _, _, n in store.fetched) == needed
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["file-07"]
    assert (tmp_path / "out" / "file-07").read_bytes() == (root / "file-07").read_bytes()


def test_check_read_data_finds_a_flipped_byte_and_names_the_files(
    tree: Path, tmp_path: Path
) -> None:
    store = Store()
    written = backup(tree, store, [])
    opened = reader(store, written)
    letter = opened.manifest.by_path()[b"docs/letter.txt"]
    loc = opened.manifest.locations[letter.chunks[0]]
    assert opened.check(read_data=True).ok
    damaged = bytearray(store.packs[loc.pack.id])
    damaged[loc.offset + 20] ^= 0x01
    store.packs[loc.pack.id] = bytes(damaged)
    assert opened.check().ok, "without read-data only structure and pack headers are read"
    report = opened.check(read_data=True)
    assert not report.ok
    assert report.damaged_files == ("docs/letter.txt", "hardlink-to-letter")
    with pytest.raises(IntegrityError) as raised:
        opened.restore(tmp_path / "out")
    assert "docs/letter.txt" in "".join(raised.value.files)


def test_excludes_leave_out_names_and_directories(tree: Path) -> None:
    store = Store()
    written = backup(
        tree, store, [], options=WriteOptions(excludes=("*.bin", "/docs/deep", "empty-dir"))
    )
    paths = {e.name for e in reader(store, written).ls()}
    assert "docs/random.bin" not in paths
    assert not any(p.startswith(("docs/deep", "empty-dir")) for p in paths)
    assert "docs/letter.txt" in paths


def test_diff_names_added_removed_and_modified_paths(tree: Path) -> None:
    store, indexes = Store(), []
    first = backup(tree, store, indexes)
    (tree / "docs" / "empty").unlink()
    (tree / "new-file").write_bytes(b"new")
    (tree / "script").chmod(0o700)
    second = backup(tree, store, indexes, cache=first.cache)
    changes = diff(reader(store, first).manifest, reader(store, second).manifest)
    assert [(c.path, c.change, c.fields) for c in changes] == [
        ("", "modified", ("mtime_ns",)),
        ("docs", "modified", ("mtime_ns",)),
        ("docs/empty", "removed", ()),
        ("new-file", "added", ()),
        ("script", "modified", ("mode",)),
    ]


def test_restoring_only_a_second_hard_link_name_restores_its_content(
    tree: Path, tmp_path: Path
) -> None:
    store = Store()
    written = backup(tree, store, [])
    reader(store, written).restore(tmp_path / "out", include=["hardlink-to-letter"])
    restored = tmp_path / "out" / "hardlink-to-letter"
    assert restored.read_bytes() == (tree / "docs" / "letter.txt").read_bytes()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["hardlink-to-letter"]


def test_a_path_that_escapes_the_target_is_refused(tmp_path: Path) -> None:
    """A manifest is sealed, not signed: anyone with a recipient can make one, so restore
    refuses names with ``..`` or outside a directory of the manifest."""
    from strongroom.client.snapshots import FormatError, Manifest
    from strongroom.client.snapshots.manifest import Entry, seal_manifest

    for bad in (b"../outside", b"a/../../x", b"/etc/passwd", b"missing-dir/file"):
        entries = (Entry(b"", "dir", 0o755, 0), Entry(bad, "symlink", 0o777, 0, target=b"x"))
        sealed = seal_manifest(Manifest(0, entries, {}), RECIPIENTS)
        opened = SnapshotReader(IDENTITY, KEY.seal(RECIPIENTS), sealed, Store().fetch)
        with pytest.raises(FormatError):
            opened.restore(tmp_path / "out")
        assert not opened.check().ok
    assert not (tmp_path / "outside").exists()


def test_fifos_are_skipped_and_reported(tree: Path) -> None:
    os.mkfifo(tree / "docs" / "a-fifo")
    store = Store()
    written = backup(tree, store, [])
    assert written.skipped == (("docs/a-fifo", "not a file, directory or symbolic link"),)
    assert "docs/a-fifo" not in {e.name for e in reader(store, written).ls()}


def test_progress_counts_bytes_and_files_and_duplicates_are_stored_once(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    content = random.Random(3).randbytes(3 * MIB)
    for name in ("one", "two", "three"):
        (root / name).write_bytes(content)
    seen_bytes: list[int] = []
    seen_files: list[str] = []
    store = Store()
    written = write_snapshot(
        root,
        repository_key=KEY,
        recipients=RECIPIENTS,
        catalog=Catalog(),
        emit_pack=store.put,
        on_bytes=seen_bytes.append,
        on_file=seen_files.append,
    )
    assert seen_files == ["one", "three", "two"]
    assert sum(seen_bytes) == 3 * len(content)
    assert written.stats.chunks_reused == 2 * written.stats.chunks_new
    assert sum(len(d) for d in store.packs.values()) < len(content) + 4096
    restored: list[int] = []
    reader(store, written).restore(tmp_path / "out", on_bytes=restored.append)
    assert sum(restored) == 3 * len(content)
    assert (tmp_path / "out" / "two").read_bytes() == content
