"""Where the client keeps what it needs to resume an upload, and that state itself.

The state of an upload in progress is a small JSON file (mode 0600) in the user's state
directory (``$XDG_STATE_HOME/strongroom``, else ``~/.local/state/strongroom``): the run,
and per artifact its name, size, sha256, artifact id, upload id, part size and the parts
known stored. Spooled bytes (archives of directories, standard input) wait in the cache
directory (``$XDG_CACHE_HOME/strongroom``, else ``~/.cache/strongroom``). Both go once the
run is confirmed. The server stays the authority on which parts it holds: a resume asks
``upload-url`` again and sends only the parts it does not list.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs


def state_home() -> Path:
    """The user's state directory for Strongroom."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "strongroom"


def cache_home() -> Path:
    """The user's cache directory for Strongroom."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "strongroom"


def key_of(*parts: str) -> str:
    """A short stable file name for what identifies an upload."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


@attrs.define
class ItemState:
    """One artifact of the upload."""

    source: str
    name: str
    size: int
    sha256: str
    artifact_id: str | None = None
    upload_id: str | None = None
    part_size: int | None = None
    completed_parts: list[int] = attrs.Factory(list)
    done: bool = False

    def same_bytes(self, other: ItemState) -> bool:
        """Whether ``other`` announces the same artifact (name, size and sha256)."""
        return (self.name, self.size, self.sha256) == (other.name, other.size, other.sha256)


@attrs.define
class UploadState:
    """An upload in progress: which run, and each artifact's progress."""

    server: str
    backup_id: str
    run_id: str
    items: list[ItemState]

    def matches(self, items: Sequence[ItemState]) -> bool:
        """Whether ``items`` are the same artifacts as this state's (a resume)."""
        return len(items) == len(self.items) and all(
            mine.same_bytes(theirs) for mine, theirs in zip(self.items, items, strict=True)
        )


class StateFile:
    """One upload's state file, written atomically (a temporary file, then renamed)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> UploadState | None:
        """The saved state; ``None`` when there is none or it cannot be read."""
        try:
            data: dict[str, Any] = json.loads(self.path.read_text())
            items = [ItemState(**item) for item in data.pop("items")]
            return UploadState(items=items, **data)
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def save(self, state: UploadState) -> None:
        """Write ``state`` (mode 0600)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_name(self.path.name + ".partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as output:
            json.dump(attrs.asdict(state), output, indent=1)
        os.replace(partial, self.path)

    def remove(self) -> None:
        """Forget the upload (it finished, or cannot be resumed)."""
        self.path.unlink(missing_ok=True)
