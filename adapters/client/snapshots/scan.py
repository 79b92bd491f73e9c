"""Walking a tree for a snapshot: entries in order, excludes applied, links never followed."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import attrs


@attrs.frozen
class Excludes:
    """Glob patterns: with a ``/`` one matches the path from the root (a leading ``/``
    anchors it there), without one it matches any name; an excluded directory is skipped
    whole."""

    patterns: tuple[str, ...] = ()

    def excluded(self, rel: bytes) -> bool:
        path = os.fsdecode(rel)
        name = path.rsplit("/", 1)[-1]
        for pattern in self.patterns:
            if pattern.startswith("/"):
                matched = fnmatch.fnmatchcase(path, pattern[1:])
            elif "/" in pattern:
                matched = fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(
                    path, "*/" + pattern
                )
            else:
                matched = fnmatch.fnmatchcase(name, pattern)
            if matched:
                return True
        return False


class Lstat(NamedTuple):
    """What a snapshot reads of a name's ``lstat`` (a tuple of nine numbers: a kept walk
    holds one per name, a third of an ``os.stat_result``)."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_uid: int
    st_gid: int
    st_dev: int
    st_ino: int
    st_nlink: int
    st_ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Lstat:
        return cls(
            st.st_mode,
            st.st_size,
            st.st_mtime_ns,
            st.st_uid,
            st.st_gid,
            st.st_dev,
            st.st_ino,
            st.st_nlink,
            st.st_ctime_ns,
        )


@attrs.frozen
class Found:
    """One name found by the walk: its relative and absolute paths and its ``lstat``."""

    rel: bytes
    path: bytes
    st: Lstat


Skipped = list[tuple[str, str]]


def walk(root: bytes, excludes: Excludes, skipped: Skipped) -> Iterator[Found]:
    """The root, then every name below it depth first, sorted by bytes. Devices, sockets,
    FIFOs and what cannot be read are not kept: (path, reason) goes to ``skipped``."""
    yield Found(b"", root, Lstat.of(os.stat(root)))
    stack: list[Iterator[tuple[bytes, bytes]]] = [_children(root, b"", skipped)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        rel, path = item
        if excludes.excluded(rel):
            continue
        try:
            st = os.lstat(path)
        except OSError as error:
            skipped.append((os.fsdecode(rel), error.strerror or str(error)))
            continue
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            skipped.append((os.fsdecode(rel), "not a file, directory or symbolic link"))
            continue
        yield Found(rel, path, Lstat.of(st))
        if stat.S_ISDIR(st.st_mode):
            stack.append(_children(path, rel, skipped))


@attrs.frozen
class Walked:
    """A whole walk kept (what it found, what it skipped), so that a tree measured for
    progress before it is written is walked, and each name ``lstat``-ed, once."""

    found: tuple[Found, ...]
    skipped: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, root: bytes, excludes: Excludes) -> Walked:
        skipped: Skipped = []
        found = tuple(walk(root, excludes, skipped))
        return cls(found, tuple(skipped))


def _children(path: bytes, rel: bytes, skipped: Skipped) -> Iterator[tuple[bytes, bytes]]:
    try:
        names = sorted(os.listdir(path))
    except OSError as error:
        skipped.append((os.fsdecode(rel) + "/", error.strerror or str(error)))
        return
    for name in names:
        yield (rel + b"/" + name if rel else name), path + b"/" + name


def read_xattrs(path: bytes) -> tuple[tuple[str, bytes], ...]:
    """A name's extended attributes, sorted; none where they cannot be read."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:  # unsupported here, or gone: the entry is kept without them
        return ()
    values = []
    for name in sorted(names):
        try:
            values.append((name, os.getxattr(path, name, follow_symlinks=False)))
        except OSError:
            continue
    return tuple(values)


def set_xattrs(path: bytes, xattrs: Sequence[tuple[str, bytes]]) -> list[str]:
    """Sets what the filesystem allows; returns the names it refused."""
    refused = []
    for name, value in xattrs:
        try:
            os.setxattr(path, name, value, follow_symlinks=False)
        except OSError:
            refused.append(name)
    return refused
