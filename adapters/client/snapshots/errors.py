"""What the snapshot format raises: one base class, so callers can catch the family."""

from __future__ import annotations


class SnapshotError(Exception):
    """Base of every error of ``strongroom.client.snapshots``."""


class SnapshotKeyError(SnapshotError):
    """A key or recipient is malformed, or no identity given can open a sealed object."""


class FormatError(SnapshotError):
    """An object does not follow the layout of docs/format.md (magic, version, lengths)."""


class IntegrityError(SnapshotError):
    """An object or chunk fails its authentication tag or its keyed hash."""

    def __init__(self, message: str, files: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.files = files
