"""The service's own answers: health, readiness, a stored object, the empty body."""

from __future__ import annotations

from typing import Literal

import attrs

Check = Literal["ok", "unavailable"]


@attrs.frozen
class Health:
    """The process is running."""

    status: Literal["ok"] = "ok"


@attrs.frozen
class ReadinessChecks:
    """Each dependency's answer."""

    database: Check
    storage: Check


@attrs.frozen
class Readiness:
    """Whether the database and object storage answer."""

    status: Check
    checks: ReadinessChecks


@attrs.frozen
class StoredResult:
    """An object stored through a presigned URL."""

    status: Literal["stored"] = "stored"


@attrs.frozen
class EmptyBody:
    """No body, or `{}`."""
