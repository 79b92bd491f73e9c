"""A drill of an ``s3`` artifact: every object of the archive restored as a file under a
scratch directory the service owns (in its data directory), read back and hashed, then the
directory removed. The objects' sha256s are compared by the drill with those the archive's
own manifest recorded when the backup was made. No bucket of the customer's is touched.

Objects are stored under numbered file names (never their keys), so no key can reach
outside the scratch directory.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any, cast

import attrs
import zstandard

from strongroom.ports.driven.drills import DrillFailedError
from strongroom.ports.driven.storage import ObjectReader

FORMAT = "strongroom-s3/1"
KEY_RECORD = "STRONGROOM.key"
MANIFEST = "manifest.json"
MAX_MANIFEST = 1024**3
CHUNK = 1024 * 1024


@attrs.frozen
class RestoredObjects:
    """The objects found in scratch (key -> sha256 hex), those the manifest lists (None
    when it records no sha256: an archive made before drills), and the bytes restored."""

    found: dict[str, str]
    listed: dict[str, str] | None
    bytes: int


def drill_s3(artifact: ObjectReader, scratch_root: Path) -> RestoredObjects:
    """Blocking: restore the archive into scratch and read it back."""
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="drill-", dir=scratch_root))
    try:
        files, manifest = _restore(artifact, scratch)
        found: dict[str, str] = {}
        total = 0
        for key, path in files.items():
            digest = hashlib.sha256()
            with path.open("rb") as file:
                while block := file.read(CHUNK):
                    digest.update(block)
                    total += len(block)
            found[key] = digest.hexdigest()
        return RestoredObjects(found, _listed(manifest), total)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _restore(artifact: ObjectReader, scratch: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    files: dict[str, Path] = {}
    manifest: dict[str, Any] | None = None
    try:
        with (
            zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], artifact)) as plain,
            tarfile.open(fileobj=plain, mode="r|") as archive,
        ):
            for member in archive:
                if member.name == MANIFEST and KEY_RECORD not in member.pax_headers:
                    manifest = _read_manifest(archive, member)
                    continue
                key = member.pax_headers.get(KEY_RECORD)
                if key is None or not (member.isfile() or member.isdir()):
                    raise DrillFailedError(f"unexpected archive member: {member.name}")
                path = scratch / str(len(files))
                data = archive.extractfile(member) if member.isfile() else None
                with path.open("wb") as out:
                    if data is not None:
                        shutil.copyfileobj(data, out, CHUNK)
                files[key] = path
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as error:
        raise DrillFailedError(
            f"the archive is damaged or truncated after {len(files)} objects: {error}"
        ) from None
    if manifest is None:
        raise DrillFailedError(f"the archive ends without its manifest after {len(files)} objects")
    return files, manifest


def _read_manifest(archive: tarfile.TarFile, member: tarfile.TarInfo) -> dict[str, Any]:
    if member.size > MAX_MANIFEST:
        raise DrillFailedError("the archive's manifest is too large")
    handle = archive.extractfile(member)
    try:
        manifest = json.loads(handle.read() if handle is not None else b"")
    except ValueError:
        raise DrillFailedError("the archive's manifest is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DrillFailedError(f"the archive's manifest is not of format {FORMAT}")
    return manifest


def _listed(manifest: dict[str, Any]) -> dict[str, str] | None:
    objects = manifest.get("objects")
    if not isinstance(objects, list):
        raise DrillFailedError("the archive's manifest has no valid object list")
    listed: dict[str, str] = {}
    for item in objects:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise DrillFailedError("the archive's manifest has no valid object list")
        if not isinstance(item.get("sha256"), str):
            return None
        listed[item["key"]] = item["sha256"]
    return listed
