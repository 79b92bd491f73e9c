"""The SDK's converter: the wire's tolerant converter over the server's own models.

Reading an answer ignores unknown fields and keeps unknown enum values as strings (a
newer server does not break this client); a backup from a server before snapshots (no
``format``, no ``encryption``) reads as an archive backup; writing a body presents the
models as the server reads them.
"""

from __future__ import annotations

from typing import Any

import attrs

from strongroom.adapters.wire.backups import Backup
from strongroom.adapters.wire.tolerant import TOLERANT

converter = TOLERANT.copy()
_BACKUP_FIELDS = {field.name for field in attrs.fields(Backup)}


def _backup(value: Any, kind: Any) -> Backup:
    if isinstance(value, dict):
        value = dict(value)
        if "encryption" in _BACKUP_FIELDS:
            value.setdefault("encryption", None)
        if "format" in _BACKUP_FIELDS:
            value.setdefault("format", "snapshot" if value.get("encryption") else "archive")
    backup: Backup = TOLERANT.structure(value, kind)
    return backup


converter.register_structure_hook(Backup, _backup)


def unstructure(value: Any) -> Any:
    """``value`` as JSON-ready data, as the API writes it."""
    return converter.unstructure(value)
