"""``Content-Disposition`` of a download (contract 13): ``attachment`` with the artifact's
name, safe to put in a header whatever the name holds (RFC 6266)."""

from __future__ import annotations

from urllib.parse import quote


def content_disposition(filename: str) -> str:
    """``attachment; filename="<name>"``; a name with characters a quoted string cannot
    carry plainly (non-ASCII, control characters, ``"``, ``\\``) gets them as ``_`` there and
    is given whole, UTF-8 percent-encoded, in ``filename*`` (RFC 8187), which browsers
    prefer."""
    fallback = "".join(
        char if " " <= char <= "~" and char not in '"\\' else "_" for char in filename
    )
    value = f'attachment; filename="{fallback}"'
    if fallback != filename:
        value += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return value
