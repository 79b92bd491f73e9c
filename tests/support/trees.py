"""Directory trees for client tests: what a tree holds, as a value two trees can be
compared by (content, modes, mtimes, links, empty directories, hard-link groups)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any


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
