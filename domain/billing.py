"""Workspace billing states and the gate table of contract section 4.

Billing gates writes, never reads: ``ensure_allowed`` is called by every write and never
by a read, so no read can be refused for billing.
"""

from __future__ import annotations

from enum import Enum, StrEnum

from strongroom.domain.errors import BillingRestrictedError


class BillingState(StrEnum):
    """Where a workspace stands with its bill."""

    TRIAL = "trial"
    ACTIVE = "active"
    WARNED = "warned"
    STOPPED = "stopped"
    BLOCKED = "blocked"


class GatedOperation(Enum):
    """The kinds of write the billing state decides on."""

    NEW_RUN = "new runs"
    UPLOAD = "uploads into existing runs"
    CONFIG_WRITE = "configuration changes"


_REFUSED: dict[BillingState, frozenset[GatedOperation]] = {
    BillingState.TRIAL: frozenset(),
    BillingState.ACTIVE: frozenset(),
    BillingState.WARNED: frozenset(),
    BillingState.STOPPED: frozenset({GatedOperation.NEW_RUN}),
    BillingState.BLOCKED: frozenset(GatedOperation),
}


def is_allowed(state: BillingState, operation: GatedOperation) -> bool:
    """Whether a workspace in ``state`` may perform ``operation``."""
    return operation not in _REFUSED[state]


def ensure_allowed(state: BillingState, operation: GatedOperation) -> None:
    """Raise ``BillingRestrictedError`` naming the state when it refuses ``operation``."""
    if not is_allowed(state, operation):
        raise BillingRestrictedError(
            f"workspace billing state is {state.value}: {operation.value} are refused"
        )
