"""Directory archives (tar + zstd): round trips, streaming, and what unpacking refuses."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strongroom.client.archive import (
    ArchiveError,
    ArchiveIntegrityError,
    DirectoryArchive,
    UnsafeMemberError,
    format_mtime,
    parse_mtime,
    unpack,
)
from support.trees import restored_root, snapshot

MIB = 1024 * 1024

# --------------------------------------------------------------------------------------
# Random trees


@attrs.frozen
class File:
    content: bytes
    mode: int
    mtime_ns: int


@attrs.frozen
class Link:
    target: str
    mtime_ns: int


@attrs.frozen
class Dir:
    children: dict[str, Any]
    mode: int
    mtime_ns: int


names = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), blacklist_characters="/\0", max_codepoint=0x1F600
    ),
    min_size=1,
    max_size=10,
).filter(lambda name: name not in (".", "..") and len(name.encode()) < 200)
mtimes = st.integers(min_value=0, max_value=4_000_000_000 * 10**9)
files = st.builds(
    File,
    st.binary(max_size=3000),
    st.integers(0, 0o777).map(lambda mode: mode | 0o400),
    mtimes,
)
links = st.builds(
    Link,
    st.one_of(names, names.map(lambda n: f"../{n}"), names.map(lambda n: f"/elsewhere/{n}")),
    mtimes,
)
trees = st.recursive(
    st.one_of(files, links),
    lambda inner: st.builds(
        Dir,
        st.dictionaries(names, inner, max_size=5),
        st.integers(0, 0o777).map(lambda mode: mode | 0o700),
        mtimes,
    ),
    max_leaves=25,
)
roots = st.builds(Dir, st.dictionaries(names, trees, max_size=6), st.just(0o755), mtimes)


def build(path: Path, node: Dir | File | Link) -> list[Path]:
    """Create ``node`` at ``path`` (directory mtimes after their contents); the files."""
    made: list[Path] = []
    if isinstance(node, File):
        path.write_bytes(node.content)
        os.chmod(path, node.mode)
        os.utime(path, ns=(node.mtime_ns, node.mtime_ns))
        return [path]
    if isinstance(node, Link):
        os.symlink(node.target, path)
        os.utime(path, ns=(node.mtime_ns, node.mtime_ns), follow_symlinks=False)
        return []
    path.mkdir(exist_ok=True)
    for name, child in node.children.items():
        made.extend(build(path / name, child))
    os.chmod(path, node.mode)
    os.utime(path, ns=(node.mtime_ns, node.mtime_ns))
    return made


def archived(*roots: Path) -> tuple[bytes, DirectoryArchive]:
    archive = DirectoryArchive(list(roots))
    data = b"".join(archive)
    return data, archive


def chunked(data: bytes, size: int = 7919) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    build(
        source,
        Dir(
            {
                "a.txt": File(b"alpha", 0o644, 1_700_000_000_123_456_789),
                "empty": Dir({}, 0o750, 1_600_000_000_000_000_001),
                "läuft 🎉.bin": File(os.urandom(5000), 0o600, 1_650_000_000_000_000_000),
                "link": Link("a.txt", 1_700_000_001_000_000_000),
            },
            0o755,
            1_700_000_002_500_000_000,
        ),
    )
    return source


# --------------------------------------------------------------------------------------


class TestRoundTrip:
    """What goes into an archive comes back exactly."""

    @settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
    @given(root=roots, hard_links=st.lists(st.tuples(st.integers(0, 100), names), max_size=3))
    def test_random_trees_come_back_exactly(
        self, root: Dir, hard_links: list[tuple[int, str]]
    ) -> None:
        """Contents, modes, mtimes (ns), symlinks, empty directories, unicode names and hard
        links: the restored tree equals the source."""
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / "source"
            made = build(source, root)
            for index, name in hard_links:
                if made and not (source / f"hl-{name}").exists():
                    os.link(made[index % len(made)], source / f"hl-{name}")
            os.utime(source, ns=(root.mtime_ns, root.mtime_ns))
            data, archive = archived(source)
            assert archive.warnings == []
            assert archive.sha256 == hashlib.sha256(data).hexdigest()
            assert archive.size == len(data)
            target = Path(scratch) / "restored"
            report = unpack(chunked(data), target, sha256=archive.sha256, size=len(data))
            assert report.sha256 == archive.sha256
            assert snapshot(restored_root(target, source)) == snapshot(source)

    def test_several_roots_and_a_nanosecond_mtime(self, tree: Path, tmp_path: Path) -> None:
        """Two roots in one archive; the PAX mtime keeps every nanosecond."""
        other = tmp_path / "other"
        build(other, Dir({"b": File(b"beta", 0o640, 5)}, 0o700, 7))
        data, _ = archived(tree, other)
        unpack(chunked(data), tmp_path / "out")
        assert snapshot(restored_root(tmp_path / "out", tree)) == snapshot(tree)
        assert snapshot(restored_root(tmp_path / "out", other)) == snapshot(other)
        assert os.lstat(restored_root(tmp_path / "out", tree) / "a.txt").st_mtime_ns == (
            1_700_000_000_123_456_789
        )

    def test_the_same_tree_gives_the_same_bytes(self, tree: Path) -> None:
        """Archiving twice gives one sha256 (a resumed upload announces the same artifact)."""
        assert archived(tree)[1].sha256 == archived(tree)[1].sha256

    @pytest.mark.parametrize(
        ("value", "ns"),
        [("1700000000.123456789", 1_700_000_000_123_456_789), ("5", 5 * 10**9), ("0.5", 5 * 10**8)],
    )
    def test_pax_mtimes_are_exact(self, value: str, ns: int) -> None:
        assert parse_mtime(value) == ns
        assert parse_mtime(format_mtime(ns)) == ns


class TestStreaming:
    """Archives are produced and read in chunks, in constant memory."""

    def test_a_large_file_is_archived_without_holding_it(self, tmp_path: Path) -> None:
        """32 MiB of incompressible data go through with far less than that in memory."""
        source = tmp_path / "big"
        source.mkdir()
        with (source / "data").open("wb") as output:
            for _ in range(32):
                output.write(os.urandom(MIB))
        tracemalloc.start()
        try:
            archive = DirectoryArchive([source])
            digest = hashlib.sha256()
            for chunk in archive:
                digest.update(chunk)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert archive.size > 32 * MIB
        assert digest.hexdigest() == archive.sha256
        assert peak < 8 * MIB, peak

    @pytest.mark.parametrize("change", ["shrink", "grow", "touch"])
    def test_a_file_changed_while_read_is_reported(self, tmp_path: Path, change: str) -> None:
        """A file that changes during its read is named in the warnings; the archive
        still completes."""
        source = tmp_path / "live"
        source.mkdir()
        victim = source / "log"
        victim.write_bytes(os.urandom(8 * MIB))
        archive = DirectoryArchive([source])
        chunks = iter(archive)
        first = next(chunks)
        if change == "shrink":
            os.truncate(victim, 1000)
        elif change == "grow":
            with victim.open("ab") as output:
                output.write(b"more")
        else:
            os.utime(victim, ns=(1, 1))
        data = first + b"".join(chunks)
        assert [w.path for w in archive.warnings] == [str(victim)]
        assert "changed while read" in archive.warnings[0].problem
        unpack(chunked(data), tmp_path / "out")
        restored = restored_root(tmp_path / "out", source) / "log"
        assert restored.stat().st_size == 8 * MIB

    def test_sockets_and_fifos_are_skipped_with_a_warning(self, tmp_path: Path) -> None:
        source = tmp_path / "special"
        source.mkdir()
        os.mkfifo(source / "pipe")
        (source / "kept").write_text("yes")
        data, archive = archived(source)
        assert [str(w) for w in archive.warnings] == [
            f"{source / 'pipe'}: skipped: not a file, directory or symbolic link"
        ]
        unpack(chunked(data), tmp_path / "out")
        assert sorted(os.listdir(restored_root(tmp_path / "out", source))) == ["kept"]

    def test_a_missing_root_is_an_error(self, tmp_path: Path) -> None:
        with pytest.raises(ArchiveError, match="not a directory"):
            archived(tmp_path / "absent")


def crafted(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """A tar + zstd archive of hand-made members (what a hostile archive could hold)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for member, content in members:
            archive.addfile(member, io.BytesIO(content) if content is not None else None)
    return zstandard.ZstdCompressor().compress(raw.getvalue())


def member(
    name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", data: bytes = b""
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.mode = 0o644
    return info, data if kind == tarfile.REGTYPE else None


class TestUnpackRefuses:
    """Unpacking never writes outside its target, and writes nothing when it refuses."""

    @pytest.mark.parametrize(
        "members",
        [
            [member("/etc/evil", data=b"x")],
            [member("../evil", data=b"x")],
            [member("a/../../evil", data=b"x")],
            [member("ok", data=b"x"), member("hl", tarfile.LNKTYPE, "../../etc/passwd")],
            [member("hl", tarfile.LNKTYPE, "/etc/passwd")],
            [member("up", tarfile.SYMTYPE, "/tmp"), member("up/evil", data=b"x")],
            [member("dev", tarfile.CHRTYPE)],
        ],
        ids=[
            "absolute",
            "dotdot",
            "nested-dotdot",
            "hardlink-out",
            "hardlink-abs",
            "through-symlink",
            "device",
        ],
    )
    def test_hostile_members(
        self, tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]
    ) -> None:
        target = tmp_path / "target"
        with pytest.raises(UnsafeMemberError):
            unpack([crafted(*members)], target)
        assert not target.exists()
        assert sorted(os.listdir(tmp_path)) == []

    def test_other_bytes_than_announced(self, tree: Path, tmp_path: Path) -> None:
        """A sha256 or size that differs: ``ArchiveIntegrityError``, nothing restored."""
        data, archive = archived(tree)
        with pytest.raises(ArchiveIntegrityError, match="sha256"):
            unpack(chunked(data), tmp_path / "a", sha256="0" * 64)
        with pytest.raises(ArchiveIntegrityError, match="bytes were read"):
            unpack(chunked(data), tmp_path / "b", sha256=archive.sha256, size=len(data) + 1)
        assert not (tmp_path / "a").exists()
        assert not (tmp_path / "b").exists()

    def test_garbage_is_not_an_archive(self, tmp_path: Path) -> None:
        with pytest.raises(ArchiveError, match="not a readable archive"):
            unpack([b"not zstd at all"], tmp_path / "x")
        assert not (tmp_path / "x").exists()

    def test_a_non_empty_target_is_refused(self, tree: Path, tmp_path: Path) -> None:
        data, _ = archived(tree)
        (tmp_path / "busy").mkdir()
        (tmp_path / "busy" / "keep").write_text("mine")
        with pytest.raises(ArchiveError, match="not an empty directory"):
            unpack(chunked(data), tmp_path / "busy")
        assert (tmp_path / "busy" / "keep").read_text() == "mine"
