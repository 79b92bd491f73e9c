"""The SDK's converter: the wire's tolerant converter over the server's own models.

Reading an answer ignores unknown fields and keeps unknown enum values as strings (a
newer server does not break this client); writing a body presents the models as the
server reads them.
"""

from __future__ import annotations

from typing import Any

from strongroom.adapters.wire.tolerant import TOLERANT

converter = TOLERANT


def unstructure(value: Any) -> Any:
    """``value`` as JSON-ready data, as the API writes it."""
    return converter.unstructure(value)
