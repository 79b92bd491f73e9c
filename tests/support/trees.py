"""Directory trees for client tests: one holding every kind of entry contract 14 names, and
what a tree holds, as a value two trees can be compared by (content, modes, mtimes, links,
empty directories, hard-link groups)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

MIB = 1 << 20
# In the text of every note, and a file's name: no stored byte may hold either.
CONTENT_MARKER = "marker-content-ALPHA-7f3c"
NAME_MARKER = "marker-name-BRAVO-91d2"


def xattrs_supported(directory: Path) -> bool:
    """Whether the file system under ``directory`` takes user extended attributes."""
    probe = directory / ".xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except OSError:
        return False
    finally:
        probe.unlink()
    return True


def every_kind_tree(root: Path, big: int = 32 * MIB) -> None:
    """Make ``root``, holding every kind of entry contract 14 names: 40 notes in ``docs/``,
    ``big.bin`` of ``big`` random bytes, ``one.bin`` of 1 MiB, a nested empty directory, a
    file named with a marker two directories down, a 0750 script, a 0600 file, a relative
    and a dangling symlink, a second hard-link name of ``docs/note-02.txt``, a Unicode name,
    a 0700 directory, user extended attributes on a file and a directory (where the file
    system takes them) and an mtime to the nanosecond on every entry below ``root``."""
    root.mkdir()
    (root / "docs" / "deep").mkdir(parents=True)
    for index in range(40):
        (root / "docs" / f"note-{index:02d}.txt").write_text(f"{CONTENT_MARKER}-{index} " * 300)
    (root / "docs" / "deep" / NAME_MARKER).write_text("x")
    (root / "big.bin").write_bytes(os.urandom(big))
    (root / "one.bin").write_bytes(os.urandom(MIB))
    (root / "empty-dir" / "nested-empty").mkdir(parents=True)
    (root / "run.sh").write_text("#!/bin/sh\necho marker-script\n")
    (root / "run.sh").chmod(0o750)
    (root / "secret.txt").write_text("marker-secret")
    (root / "secret.txt").chmod(0o600)
    os.symlink("docs/note-01.txt", root / "relative-link")
    os.symlink("/nonexistent/target", root / "dangling-link")
    os.link(root / "docs" / "note-02.txt", root / "hard-link.txt")
    (root / "ünïcode name.txt").write_text("marker-unicode")
    (root / "private").mkdir()
    (root / "private" / "key.txt").write_text("marker-private")
    if xattrs_supported(root):
        os.setxattr(root / "secret.txt", "user.tag", b"marker-xattr")
        os.setxattr(root / "secret.txt", "user.empty", b"")
        os.setxattr(root / "private", "user.dir-tag", b"marker-dir-xattr")
    (root / "private").chmod(0o700)
    for index, path in enumerate(sorted(root.rglob("*"), reverse=True)):
        nanoseconds = 1_600_000_000_123_456_789 + index
        os.utime(path, ns=(nanoseconds, nanoseconds), follow_symlinks=False)


def snapshot(root: Path) -> dict[str, Any]:
    """Every path under ``root`` (``root`` itself as ``"."``) with what a restore must keep:
    its kind, permission bits, mtime in nanoseconds, and its content's sha256 or its link's
    target; hard links appear as groups of names sharing one file."""
    entries: dict[str, Any] = {}
    inodes: dict[tuple[int, int], list[str]] = {}
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for name in [".", *sorted(subdirs), *sorted(files)]:
            if name == "." and directory != str(root):
                continue
            path = os.path.join(directory, name) if name != "." else directory
            relative = os.path.relpath(path, root)
            info = os.lstat(path)
            mode, mtime = stat.S_IMODE(info.st_mode), info.st_mtime_ns
            if stat.S_ISLNK(info.st_mode):
                entries[relative] = ("link", os.readlink(path), mtime)
            elif stat.S_ISDIR(info.st_mode):
                entries[relative] = ("dir", mode, mtime)
            else:
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                entries[relative] = ("file", mode, mtime, info.st_size, digest)
                inodes.setdefault((info.st_dev, info.st_ino), []).append(relative)
    groups = sorted(sorted(names) for names in inodes.values() if len(names) > 1)
    return {"entries": entries, "hard_links": groups}


def restored_root(target: Path, source: Path) -> Path:
    """Where a restore into ``target`` puts the archived directory ``source``."""
    return target / os.path.abspath(source).lstrip("/")
