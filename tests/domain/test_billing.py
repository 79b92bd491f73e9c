"""The billing gate table of contract section 4, checked for every state and operation."""

from __future__ import annotations

import pytest

from strongroom.domain.billing import BillingState, GatedOperation, ensure_allowed, is_allowed
from strongroom.domain.errors import BillingRestrictedError

# Contract section 4, row by row: which states allow each gated write.
ALLOWED_IN: dict[GatedOperation, frozenset[str]] = {
    GatedOperation.NEW_RUN: frozenset({"trial", "active", "warned"}),
    GatedOperation.UPLOAD: frozenset({"trial", "active", "warned", "stopped"}),
    GatedOperation.CONFIG_WRITE: frozenset({"trial", "active", "warned", "stopped"}),
}
CASES = [(state, operation) for state in BillingState for operation in GatedOperation]


def test_the_billing_states_are_the_specs_five() -> None:
    """A workspace is in ``trial``, ``active``, ``warned``, ``stopped`` or ``blocked``."""
    assert {state.value for state in BillingState} == {
        "trial",
        "active",
        "warned",
        "stopped",
        "blocked",
    }


def test_only_writes_are_gated() -> None:
    """The gate knows new runs, uploads into existing runs and configuration writes, and no
    kind of read: reads, downloads and sign-in can never be refused for billing."""
    assert set(GatedOperation) == set(ALLOWED_IN)


@pytest.mark.parametrize(("state", "operation"), CASES)
def test_gate_table(state: BillingState, operation: GatedOperation) -> None:
    """Each state allows or refuses each gated write exactly as the contract's table says."""
    expected = state.value in ALLOWED_IN[operation]
    assert is_allowed(state, operation) is expected
    if expected:
        ensure_allowed(state, operation)
    else:
        with pytest.raises(BillingRestrictedError):
            ensure_allowed(state, operation)


@pytest.mark.parametrize(
    ("state", "operation"),
    [(s, o) for s, o in CASES if s.value not in ALLOWED_IN[o]],
)
def test_a_refusal_names_the_state(state: BillingState, operation: GatedOperation) -> None:
    """A billing refusal is 409 ``billing_restricted`` and its message names the state."""
    with pytest.raises(BillingRestrictedError) as refused:
        ensure_allowed(state, operation)
    assert refused.value.code == "billing_restricted"
    assert refused.value.message.startswith(f"workspace billing state is {state.value}:")
    assert "forbidden" not in refused.value.message


def test_the_contracts_example_message() -> None:
    """A blocked workspace's configuration change gives the contract's own wording."""
    with pytest.raises(BillingRestrictedError) as refused:
        ensure_allowed(BillingState.BLOCKED, GatedOperation.CONFIG_WRITE)
    assert refused.value.message == (
        "workspace billing state is blocked: configuration changes are refused"
    )
