"""Generated directory trees for the snapshot bench: reproducible from a seed, about the
size asked, shaped like a real home or project directory, and changed the way a day
changes one.

A tree holds many small text-like files (source, configuration, notes), a few large files
mixing text-like and incompressible stretches (databases, images, archives), duplicates
(copies and vendored folders), empty directories and symlinks. ``change_tree`` touches
about a fraction of the files: edits in the middle, appends, new files and deletions.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import attrs

WORDS = [
    "backup",
    "restore",
    "snapshot",
    "chunk",
    "index",
    "pack",
    "manifest",
    "tenant",
    "workspace",
    "run",
    "artifact",
    "lock",
    "retain",
    "expire",
    "policy",
    "schedule",
    "worker",
    "agent",
    "claim",
    "lease",
    "heartbeat",
    "confirm",
    "upload",
    "download",
    "storage",
    "bucket",
    "object",
    "version",
    "hold",
    "proof",
    "drill",
    "health",
    "late",
    "failing",
    "never",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "with",
    "as",
    "was",
    "on",
    "be",
    "at",
    "by",
    "this",
    "had",
    "not",
    "are",
    "but",
    "from",
    "def",
    "class",
    "return",
    "import",
    "self",
    "None",
    "True",
    "False",
    "if",
    "else",
    "for",
    "while",
    "try",
    "except",
    "raise",
]
MIB = 1 << 20


@attrs.frozen
class TreeStats:
    """What a tree holds."""

    files: int
    bytes: int


_PHRASES: list[bytes] = []


def _phrases() -> list[bytes]:
    """4 096 lines of words (the same on every run): text is drawn from them."""
    if not _PHRASES:
        rng = random.Random(0)
        _PHRASES.extend(
            (" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + "\n").encode()
            for _ in range(4096)
        )
    return _PHRASES


def _text(rng: random.Random, size: int) -> bytes:
    """Text-like bytes (zstd packs them about 3x), a new sequence of lines every call."""
    phrases = _phrases()
    count = size // 40 + 1
    picks = memoryview(rng.randbytes(2 * count)).cast("H")
    return b"".join(phrases[index & 4095] for index in picks)[:size]


def _noise(rng: random.Random, size: int) -> bytes:
    """Incompressible bytes."""
    return rng.randbytes(size)


def _large(rng: random.Random, size: int) -> bytes:
    """Alternating text-like and incompressible stretches of 1-8 MiB."""
    parts: list[bytes] = []
    total = 0
    while total < size:
        length = min(size - total, rng.randint(1, 8) * MIB)
        parts.append(_text(rng, length) if rng.random() < 0.5 else _noise(rng, length))
        total += length
    return b"".join(parts)


def generate_tree(root: Path, target_bytes: int, seed: int = 1) -> TreeStats:
    """Write a tree of about ``target_bytes`` under ``root`` (which must not exist)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    files = written = 0
    large_budget = int(target_bytes * 0.6)
    for index in range(max(1, large_budget // (64 * MIB))):
        size = min(large_budget - written, rng.randint(24, 104) * MIB)
        if size <= 0:
            break
        path = root / "media" / f"blob-{index:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_large(rng, size))
        files, written = files + 1, written + size
    project = 0
    while written < target_bytes * 0.9:
        folder = root / "projects" / f"p{project:03d}" / rng.choice(["src", "docs", "etc"])
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(rng.randint(20, 200)):
            size = int(rng.paretovariate(1.2) * 2048) % (4 * MIB) + 1
            (folder / f"f{index:04d}.txt").write_bytes(_text(rng, size))
            files, written = files + 1, written + size
        project += 1
    # Duplicates: whole projects copied (a vendored folder), and single files.
    sources = sorted((root / "projects").iterdir())
    while written < target_bytes and sources:
        source = rng.choice(sources)
        copy = root / "vendor" / f"{source.name}-{written}"
        shutil.copytree(source, copy, symlinks=True)
        copied = [p for p in copy.rglob("*") if p.is_file()]
        files += len(copied)
        written += sum(p.stat().st_size for p in copied)
    (root / "empty" / "nested").mkdir(parents=True)
    (root / "latest").symlink_to("media")
    return TreeStats(files, written)


def change_tree(root: Path, fraction: float = 0.05, seed: int = 2) -> TreeStats:
    """Change about ``fraction`` of the files: a quarter each edited in the middle,
    appended to, deleted, and as many new files written. Returns what was changed."""
    rng = random.Random(seed)
    candidates = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    chosen = rng.sample(candidates, max(4, int(len(candidates) * fraction)))
    changed = 0
    for number, path in enumerate(chosen):
        action = number % 4
        size = path.stat().st_size
        if action == 0:
            with path.open("r+b") as file:
                length = min(size, rng.randint(1, 64) * 1024)
                file.seek(max(0, size // 2 - length // 2))
                file.write(_text(rng, length))
            changed += length
        elif action == 1:
            extra = _text(rng, rng.randint(1, 256) * 1024)
            with path.open("ab") as file:
                file.write(extra)
            changed += len(extra)
        elif action == 2:
            path.unlink()
        else:
            fresh = path.with_name(f"new-{number}-{path.name}")
            data = _text(rng, rng.randint(1, 512) * 1024)
            fresh.write_bytes(data)
            changed += len(data)
    # Keep mtimes moving forward even on coarse file systems.
    for path in chosen:
        if path.exists():
            os.utime(path)
    return TreeStats(len(chosen), changed)


def tree_bytes(root: Path) -> int:
    """The bytes of every regular file below ``root`` (a repository's stored size)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
