"""``strongroom restore ARTIFACT --to DIR``: a directory archive downloaded and unpacked
as it streams, its sha256 checked on the way (see ``archive.unpack``: nothing appears at
``DIR`` unless every byte matched)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2

from strongroom.client.archive import CHUNK, ArchiveError, UnpackReport, unpack


class DownloadError(ArchiveError):
    """Storage did not give the artifact's bytes."""


def restore_from_url(
    transport: httpx2.Client,
    url: str,
    target: Path,
    *,
    sha256: str,
    size: int,
    on_bytes: Callable[[int], None] | None = None,
) -> UnpackReport:
    """Stream the archive at the presigned ``url`` into ``target``, checking its ``sha256``
    and ``size``."""
    advance = on_bytes or (lambda _: None)
    with transport.stream("GET", url) as response:
        if response.status_code != 200:
            response.read()
            raise DownloadError(f"storage answered {response.status_code}: {response.text[:300]}")

        def chunks() -> Iterator[bytes]:
            for chunk in response.iter_bytes(CHUNK):
                advance(len(chunk))
                yield chunk

        return unpack(chunks(), target, sha256=sha256, size=size)
