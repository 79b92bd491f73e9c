"""Listing a snapshot and comparing two."""

from __future__ import annotations

import os

import attrs

from strongroom.client.snapshots.manifest import Entry, Manifest

_COMPARED = ("kind", "mode", "uid", "gid", "mtime_ns", "size", "chunks", "target", "xattrs")


def ls(manifest: Manifest, path: str = "") -> list[Entry]:
    """The entries at or below ``path`` (the whole tree for ``""``), in tree order."""
    prefix = os.fsencode(path).strip(b"/")
    if not prefix:
        return list(manifest.entries)
    return [e for e in manifest.entries if e.path == prefix or e.path.startswith(prefix + b"/")]


@attrs.frozen
class Change:
    """``added``, ``removed`` or ``modified`` (with the fields that differ)."""

    path: str
    change: str
    fields: tuple[str, ...] = ()


def diff(old: Manifest, new: Manifest) -> list[Change]:
    """What changed from ``old`` to ``new``, by path in byte order."""
    before, after = old.by_path(), new.by_path()
    changes = []
    for path in sorted(before.keys() | after.keys()):
        a, b = before.get(path), after.get(path)
        if a is None and b is not None:
            changes.append(Change(b.name, "added"))
        elif b is None and a is not None:
            changes.append(Change(a.name, "removed"))
        elif a is not None and b is not None:
            fields = tuple(f for f in _COMPARED if getattr(a, f) != getattr(b, f))
            if fields:
                changes.append(Change(a.name, "modified", fields))
    return changes
