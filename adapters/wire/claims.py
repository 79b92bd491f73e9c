"""Claims: a worker takes the oldest queued run of its backups."""

from __future__ import annotations

from datetime import datetime

import attrs

from strongroom.adapters.wire.backups import Backup
from strongroom.adapters.wire.runs import Run
from strongroom.adapters.wire.views import meta
from strongroom.domain import runs as domain_runs


@attrs.frozen
class ClaimRequest:
    """`POST /v1/claims`."""

    wait_seconds: int = attrs.field(
        default=0,
        metadata=meta(
            f"How long to wait for a queued run (long poll), 0 to {domain_runs.MAX_CLAIM_WAIT}.",
            schema={"minimum": 0, "maximum": domain_runs.MAX_CLAIM_WAIT},
        ),
    )


# The view of a class outside the domain: bound in adapters/http/bindings.py.
@attrs.frozen
class Claim:
    """A claimed run, its backup and its lease."""

    run: Run
    backup: Backup
    lease_expires_at: datetime = attrs.field(metadata=meta(get="run.lease_expires_at"))
    """When the lease runs out unless a heartbeat extends it."""
