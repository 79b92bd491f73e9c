"""Directory archives: a tree written as tar (PAX format) compressed with zstd, streamed.

Writing (``DirectoryArchive``) is a generator of compressed chunks in constant memory: the
tar headers come from ``tarfile.TarInfo.tobuf`` and file contents are read in chunks, so
no whole file is ever held. The sha256 and the size of the compressed stream are computed
while it is produced.

What an archive keeps:

- regular files, directories (empty ones too), symbolic links (stored as links, never
  followed; their target is kept as written, absolute or not) and hard links (a second
  name of a file already archived is stored as a tar hard link);
- permission bits (``mode & 0o7777``), numeric owner and group (recorded, not restored);
- mtimes with nanosecond precision: the ustar field holds the whole seconds, a PAX
  ``mtime`` record the exact decimal value (``1700000000.123456789``). A negative mtime
  is kept to the second only.
- names of any encoding: UTF-8 in PAX records; bytes that are not UTF-8 are kept as raw
  bytes (``hdrcharset=BINARY``).

A member's name is the archived path made absolute, without its leading ``/`` (as GNU tar
does): ``/home/ada/docs/a.txt`` is ``home/ada/docs/a.txt``, so several roots never clash
and a restore ``--to /`` puts everything back where it was. A root that is a symbolic
link to a directory is followed (the name stays the link's); links below it are not.

Files that change while they are read (size or mtime differ between the ``stat`` before
and the ``fstat`` after the read, or the file ended early or grew), vanish before they are
opened, cannot be read, or are not files, directories or links (sockets, FIFOs, devices)
are reported in ``warnings``; they do not stop the archive. A file that shrank is padded
with zero bytes to the size its header announced. Whether such warnings fail a backup is
the caller's decision (the agent and ``push`` report them and succeed).

Reading (``unpack``) streams too: the compressed chunks are hashed as they are read, the
tar is extracted into a staging directory next to the target, and only when the sha256
and size match what was announced is the staging directory moved into place; otherwise
it is removed and ``ArchiveIntegrityError`` raised. Extraction refuses what tarfile's
``data`` filter refuses for names and hard links: absolute names, ``..`` components, a
hard link to anything but a file extracted before, a write through a symbolic link, and
device or FIFO members. Symbolic links themselves are restored as they were archived
(their target is data: they are never followed while extracting). Modes are restored
without setuid and setgid bits; directories get their mode and mtime after their
contents.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import stat
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import BinaryIO, cast

import attrs
import zstandard

CHUNK = 1024 * 1024
COMPRESSION_LEVEL = 3
_ENCODING = "utf-8"
_ERRORS = "surrogateescape"
_BILLION = 1_000_000_000
# setuid and setgid are not restored: a restore must not create privileged executables.
_RESTORED_MODE_BITS = 0o1777


@attrs.frozen
class ArchiveWarning:
    """Something about one path that the archive could not keep exactly."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


class ArchiveError(Exception):
    """An archive cannot be written or unpacked."""


class UnsafeMemberError(ArchiveError):
    """A member would land outside the target, or through a link: refused."""


class ArchiveIntegrityError(ArchiveError):
    """The bytes read differ from what was announced (sha256 or size)."""


def member_name(path: str) -> str:
    """The name of ``path`` in an archive: absolute, normalised, without its leading ``/``."""
    return os.path.normpath(os.path.abspath(path)).lstrip("/")


def format_mtime(mtime_ns: int) -> str:
    """An mtime in nanoseconds as the exact decimal PAX value."""
    seconds, fraction = divmod(mtime_ns, _BILLION)
    return f"{seconds}.{fraction:09d}" if fraction else str(seconds)


def parse_mtime(value: str) -> int:
    """A PAX mtime (decimal seconds) in nanoseconds, exactly."""
    return int(Decimal(value) * _BILLION)


class DirectoryArchive:
    """The tar + zstd archive of ``roots``, produced by iteration.

    ``for chunk in archive: ...`` yields the compressed bytes; once the iteration is over,
    ``size``, ``sha256``, ``warnings`` and the counts describe what was produced.
    ``bytes_read`` grows during the iteration (file contents read so far), for progress.
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]], level: int = COMPRESSION_LEVEL):
        if not roots:
            raise ArchiveError("nothing to archive")
        self._roots = [os.path.abspath(os.fspath(root)) for root in roots]
        self._level = level
        self._digest = hashlib.sha256()
        self.size = 0
        self.bytes_read = 0
        self.entries = 0
        self.warnings: list[ArchiveWarning] = []
        self._done = False
        self._seen_inodes: dict[tuple[int, int], str] = {}

    @property
    def sha256(self) -> str:
        """The hex sha256 of the compressed stream (complete once the iteration ended)."""
        return self._digest.hexdigest()

    @property
    def done(self) -> bool:
        """Whether the whole archive was produced."""
        return self._done

    def __iter__(self) -> Iterator[bytes]:
        for root in self._roots:
            if not os.path.isdir(root):
                raise ArchiveError(f"{root}: not a directory")
        compressor = zstandard.ZstdCompressor(level=self._level).compressobj()
        pending = bytearray()
        offset = 0
        for raw in self._tar_blocks():
            offset += len(raw)
            pending += raw
            if len(pending) >= CHUNK:
                yield from self._emit(compressor.compress(bytes(pending)))
                pending.clear()
        remainder = offset % tarfile.RECORDSIZE
        if remainder:
            pending += tarfile.NUL * (tarfile.RECORDSIZE - remainder)
        yield from self._emit(compressor.compress(bytes(pending)))
        yield from self._emit(compressor.flush())
        self._done = True

    def write_to(self, target: io.RawIOBase | io.BufferedIOBase) -> None:
        """Write the whole archive to a binary file."""
        for chunk in self:
            target.write(chunk)

    def _emit(self, compressed: bytes) -> Iterator[bytes]:
        if compressed:
            self._digest.update(compressed)
            self.size += len(compressed)
            yield compressed

    # ----------------------------------------------------------------------------------
    # The tar stream

    def _tar_blocks(self) -> Iterator[bytes]:
        for root in self._roots:
            yield from self._tree(root)
        yield tarfile.NUL * (tarfile.BLOCKSIZE * 2)

    def _tree(self, root: str) -> Iterator[bytes]:
        """The root directory (followed if a link), then everything below it, depth first
        and sorted by name, so the same tree always gives the same bytes."""
        stack: list[tuple[str, bool]] = [(root, True)]
        while stack:
            path, is_root = stack.pop()
            try:
                info = os.stat(path) if is_root else os.lstat(path)
            except FileNotFoundError:
                self._warn(path, "vanished before it was read")
                continue
            if stat.S_ISDIR(info.st_mode):
                yield self._header(path, info, tarfile.DIRTYPE)
                try:
                    children = sorted(os.listdir(path), reverse=True)
                except OSError as error:
                    self._warn(path, f"cannot list: {error.strerror}")
                    continue
                stack.extend((os.path.join(path, child), False) for child in children)
            elif stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(path)
                except OSError as error:
                    self._warn(path, f"cannot read link: {error.strerror}")
                    continue
                yield self._header(path, info, tarfile.SYMTYPE, linkname=target)
            elif stat.S_ISREG(info.st_mode):
                yield from self._file(path, info)
            else:
                self._warn(path, "skipped: not a file, directory or symbolic link")

    def _file(self, path: str, before: os.stat_result) -> Iterator[bytes]:
        inode = (before.st_dev, before.st_ino)
        if before.st_nlink > 1 and inode in self._seen_inodes:
            yield self._header(path, before, tarfile.LNKTYPE, linkname=self._seen_inodes[inode])
            return
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            self._warn(path, "vanished before it was read")
            return
        except OSError as error:
            self._warn(path, f"cannot read: {error.strerror}")
            return
        with os.fdopen(descriptor, "rb", buffering=0) as source:
            opened = os.fstat(source.fileno())
            if not stat.S_ISREG(opened.st_mode):
                self._warn(path, "changed while read: no longer a regular file")
                return
            if before.st_nlink > 1:
                self._seen_inodes[inode] = member_name(path)
            yield self._header(path, opened, tarfile.REGTYPE, size=opened.st_size)
            left = opened.st_size
            while left:
                data = source.read(min(CHUNK, left))
                if not data:
                    self._warn(path, "changed while read: it shrank (padded with zeros)")
                    data = tarfile.NUL * left
                left -= len(data)
                self.bytes_read += len(data)
                yield data
            if source.read(1):
                self._warn(path, "changed while read: it grew (cut at its first size)")
            after = os.fstat(source.fileno())
        changed = (after.st_size, after.st_mtime_ns) != (opened.st_size, opened.st_mtime_ns)
        if changed and not self._warned(path):
            self._warn(path, "changed while read")
        padding = opened.st_size % tarfile.BLOCKSIZE
        if padding:
            yield tarfile.NUL * (tarfile.BLOCKSIZE - padding)

    def _header(
        self, path: str, info: os.stat_result, kind: bytes, linkname: str = "", size: int = 0
    ) -> bytes:
        member = tarfile.TarInfo(member_name(path))
        member.type = kind
        member.mode = stat.S_IMODE(info.st_mode)
        member.uid, member.gid = info.st_uid, info.st_gid
        member.size = size
        member.linkname = linkname
        member.mtime = info.st_mtime_ns // _BILLION
        if info.st_mtime_ns % _BILLION and info.st_mtime_ns >= 0:
            member.pax_headers = {"mtime": format_mtime(info.st_mtime_ns)}
        self.entries += 1
        return member.tobuf(tarfile.PAX_FORMAT, _ENCODING, _ERRORS)

    def _warn(self, path: str, problem: str) -> None:
        self.warnings.append(ArchiveWarning(path, problem))

    def _warned(self, path: str) -> bool:
        return any(warning.path == path for warning in self.warnings)


# --------------------------------------------------------------------------------------
# Reading


class _HashingReader(io.RawIOBase):
    """A readable over an iterable of chunks that hashes and counts what is read."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buffer = b""
        self.digest = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = bytes(chunk)
        count = min(len(target), len(self._buffer))
        taken, self._buffer = self._buffer[:count], self._buffer[count:]
        target[:count] = taken
        self.digest.update(taken)
        self.size += count
        return count

    def drain(self) -> None:
        """Read (and hash) whatever is left."""
        while self.read(CHUNK):
            pass


@attrs.frozen
class UnpackReport:
    """What an unpack restored."""

    entries: int
    files: int
    bytes_written: int
    sha256: str
    size: int


def unpack(
    chunks: Iterable[bytes],
    target: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    size: int | None = None,
) -> UnpackReport:
    """Unpack the archive read from ``chunks`` into ``target`` (absent or an empty
    directory), checking ``sha256`` and ``size`` of the compressed bytes when given.

    Nothing appears at ``target`` unless the whole archive was read and matched.
    """
    destination = Path(os.path.abspath(os.fspath(target)))
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ArchiveError(f"{destination}: exists and is not an empty directory")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(os.path.join(destination.parent, f".{destination.name}.partial-{os.getpid()}"))
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(mode=0o700)
    source = _HashingReader(chunks)
    try:
        extractor = _Extractor(str(staging))
        readable = cast(BinaryIO, source)
        with zstandard.ZstdDecompressor().stream_reader(readable, read_size=CHUNK) as plain:
            with tarfile.open(
                fileobj=plain, mode="r|", encoding=_ENCODING, errors=_ERRORS
            ) as archive:
                for member in archive:
                    extractor.extract(archive, member)
            source.drain()
        digest = source.digest.hexdigest()
        if sha256 is not None and digest != sha256.lower():
            raise ArchiveIntegrityError(
                f"sha256 of what was read is {digest}, the artifact's is {sha256.lower()}"
            )
        if size is not None and source.size != size:
            raise ArchiveIntegrityError(f"{source.size} bytes were read, the artifact has {size}")
        extractor.finish()
        if destination.exists():
            destination.rmdir()
        os.rename(staging, destination)
    except (tarfile.TarError, zstandard.ZstdError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArchiveError(f"not a readable archive: {error}") from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return UnpackReport(
        extractor.entries, extractor.files, extractor.bytes_written, digest, source.size
    )


class _Extractor:
    """Writes members under ``root`` safely; directory modes and mtimes wait for
    ``finish`` (a read-only directory must still take its contents)."""

    def __init__(self, root: str) -> None:
        self._root = os.path.realpath(root)
        self._files: set[str] = set()
        self._directories: list[tuple[str, int, int]] = []
        self.entries = 0
        self.files = 0
        self.bytes_written = 0

    def extract(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        relative = _safe_relative(member.name)
        path = os.path.join(self._root, relative)
        self._check_parents(relative)
        mtime_ns = _mtime_ns(member)
        mode = member.mode & _RESTORED_MODE_BITS
        self.entries += 1
        if member.isdir():
            if not os.path.isdir(path) or os.path.islink(path):
                self._clear(path)
                os.mkdir(path, 0o700)
            self._directories.append((path, mode, mtime_ns))
            return
        self._clear(path)
        if member.issym():
            os.symlink(member.linkname, path)
            os.utime(path, ns=(mtime_ns, mtime_ns), follow_symlinks=False)
        elif member.islnk():
            linked = _safe_relative(member.linkname)
            if linked not in self._files:
                raise UnsafeMemberError(
                    f"{member.name}: hard link to {member.linkname!r}, not a file of this archive"
                )
            os.link(os.path.join(self._root, linked), path, follow_symlinks=False)
            self._files.add(relative)
        elif member.isreg():
            reader = archive.extractfile(member)
            assert reader is not None
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(descriptor, "wb") as output:
                while data := reader.read(CHUNK):
                    output.write(data)
                    self.bytes_written += len(data)
            os.chmod(path, mode)
            os.utime(path, ns=(mtime_ns, mtime_ns))
            self._files.add(relative)
            self.files += 1
        else:
            raise UnsafeMemberError(f"{member.name}: devices and FIFOs are not restored")

    def finish(self) -> None:
        """Directory modes and mtimes, deepest first (after their contents)."""
        for path, mode, mtime_ns in sorted(self._directories, key=lambda d: d[0], reverse=True):
            os.chmod(path, mode)
            os.utime(path, ns=(mtime_ns, mtime_ns))

    def _check_parents(self, relative: str) -> None:
        """Create the missing parents of ``relative``; refuse a parent that is a link (a
        write through it could land anywhere)."""
        current = self._root
        for part in relative.split("/")[:-1]:
            current = os.path.join(current, part)
            if os.path.islink(current):
                raise UnsafeMemberError(f"{relative}: its parent {part!r} is a symbolic link")
            if not os.path.isdir(current):
                self._clear(current)
                os.mkdir(current, 0o700)

    def _clear(self, path: str) -> None:
        """Remove what stands at ``path`` (a later member replaces an earlier one)."""
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._files.discard(os.path.relpath(path, self._root))


def _safe_relative(name: str) -> str:
    """A member name as a relative path inside the target, or ``UnsafeMemberError``."""
    if not name or name.startswith("/") or "\0" in name:
        raise UnsafeMemberError(f"{name!r}: absolute or empty names are refused")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafeMemberError(f"{name!r}: names with '..' are refused")
    if not parts:
        raise UnsafeMemberError(f"{name!r}: the target itself cannot be a member")
    return "/".join(parts)


def _mtime_ns(member: tarfile.TarInfo) -> int:
    exact = member.pax_headers.get("mtime")
    if exact is not None:
        with contextlib.suppress(ArithmeticError, ValueError):
            return parse_mtime(exact)
    return int(member.mtime) * _BILLION


__all__ = [
    "ArchiveError",
    "ArchiveIntegrityError",
    "ArchiveWarning",
    "DirectoryArchive",
    "UnpackReport",
    "UnsafeMemberError",
    "format_mtime",
    "member_name",
    "parse_mtime",
    "unpack",
]
