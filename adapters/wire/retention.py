"""Retention explained (contract 15): each run's verdict, and a proposed policy to try."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from strongroom.adapters.wire.views import meta, view_of
from strongroom.domain.backups import RetentionPolicy
from strongroom.domain.keep_rules import Verdict


@view_of(Verdict)
@attrs.frozen
class RetentionVerdict:
    """One successful run (with an available artifact) and what retention does with it."""

    run_id: UUID
    finished_at: datetime
    keep: bool
    """False: the run expires (its artifacts are removed once no kept run references them)."""
    reasons: list[str] = attrs.field(
        metadata=meta(
            "Why it is kept (empty when it expires): `within P30D`, `last 3`, "
            "`hourly 2026-11-26T14`, `daily 2026-11-26`, `weekly 2026-W48`, `monthly 2026-11`, "
            "`yearly 2026`, `locked until <instant>`, `held`, `newest`, `referenced`.",
            schema={"examples": [["newest", "within P30D", "daily 2026-11-26"]]},
        )
    )
    expires_at: datetime | None
    """When `expire_after` stops keeping it; null once that has passed."""


@attrs.frozen
class RetentionPreview:
    """`POST /v1/backups/{bid}/retention/preview`: the policy to try."""

    retention: RetentionPolicy
