"""Tables for people: as wide as the terminal (80 columns when piped, unless ``COLUMNS``
says otherwise), text cut with an ellipsis, ids shortened to a prefix the commands accept
back, sizes in KiB/MiB. Ids, numbers and times are never cut: text columns give way."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from strongroom.client.converter import converter

PIPED_WIDTH = 80
SHORT_ID = 8
GAP = "  "
ELLIPSIS = "…"
MIN_TEXT = 8  # a text column keeps at least this much (or its header, or its longest cell)
SIZE_COLUMNS = frozenset({"size", "bytes", "bytes_total", "bytes_done", "bytes_uploaded"})
UUID_TEXT = re.compile(r"^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$", re.IGNORECASE)
UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(size: int) -> str:
    """``size`` bytes in binary units: ``512 B``, ``1.5 KiB``, ``12.0 MiB``."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in UNITS:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def terminal_width() -> int:
    """``COLUMNS`` when set, else the terminal's width, else 80 (piped)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        pass
    return PIPED_WIDTH


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data (models, UUIDs and datetimes included)."""
    return converter.unstructure(value)


def as_uuid(value: Any) -> UUID | None:
    """``value`` when it is an id (a UUID, or its text)."""
    if isinstance(value, UUID):
        return value
    if isinstance(value, str) and UUID_TEXT.match(value):
        return UUID(value)
    return None


def text(value: Any) -> str:
    """A value as one line of text."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(text(item) for item in value)
    if attrs.has(type(value)):
        return json.dumps(plain(value), sort_keys=True)
    return str(value)


@attrs.frozen
class Cell:
    """One cell: its text, whether it may be cut, and its alignment."""

    shown: str
    fixed: bool  # an id, a number, a time: never cut
    right: bool = False


def cell(value: Any, column: str, short: bool) -> Cell:
    """How ``value`` of ``column`` is shown."""
    identifier = as_uuid(value)
    if identifier is not None:
        return Cell(str(identifier)[:SHORT_ID] if short else str(identifier), fixed=True)
    if isinstance(value, bool) or value is None or isinstance(value, datetime):
        return Cell(text(value), fixed=True)
    if isinstance(value, int):
        shown = human_size(value) if column in SIZE_COLUMNS else str(value)
        return Cell(shown, fixed=True, right=True)
    return Cell(text(value).replace("\n", " "), fixed=False)


def _short_ids_are_unique(rows: Sequence[dict[str, Any]]) -> bool:
    seen: dict[str, UUID] = {}
    for row in rows:
        for value in row.values():
            identifier = as_uuid(value)
            if identifier is None:
                continue
            prefix = str(identifier)[:SHORT_ID]
            if seen.setdefault(prefix, identifier) != identifier:
                return False
    return True


def _fit(headers: Sequence[str], body: Sequence[Sequence[Cell]], width: int) -> list[int]:
    """Column widths within ``width``: the widest text column gives way first."""
    widths = [max([len(h)] + [len(row[i].shown) for row in body]) for i, h in enumerate(headers)]
    floors = [
        widths[i]
        if any(row[i].fixed for row in body) and all(row[i].fixed for row in body)
        else min(widths[i], max(len(h), MIN_TEXT))
        for i, h in enumerate(headers)
    ]
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    while excess > 0:
        candidates = [i for i in range(len(widths)) if widths[i] > floors[i]]
        if not candidates:
            break  # ids and numbers are never cut: the line runs over instead
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def _cut(shown: str, width: int) -> str:
    return shown if len(shown) <= width else shown[: max(width - 1, 0)] + ELLIPSIS


def table_lines(
    rows: Iterable[Any], columns: Sequence[str], *, width: int, no_trunc: bool = False
) -> list[str]:
    """``columns`` of ``rows`` (models or mappings) as aligned lines, a header first."""
    mappings = [row if isinstance(row, dict) else attrs.asdict(row, recurse=False) for row in rows]
    short = not no_trunc and _short_ids_are_unique(mappings)
    headers = [column.upper().replace("_", " ") for column in columns]
    body = [[cell(row.get(column), column, short) for column in columns] for row in mappings]
    widths = (
        [max([len(h)] + [len(r[i].shown) for r in body]) for i, h in enumerate(headers)]
        if no_trunc
        else _fit(headers, body, width)
    )
    lines = []
    for row in [[Cell(h, fixed=False) for h in headers], *body]:
        parts = []
        for i, each in enumerate(row):
            shown = _cut(each.shown, widths[i])
            parts.append(shown.rjust(widths[i]) if each.right else shown.ljust(widths[i]))
        lines.append(GAP.join(parts).rstrip())
    return lines
