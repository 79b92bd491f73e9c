"""A workspace's admission of one more backup (contract 4 and 5): billing first, then the
quota, whose limit is an operator's override or the default, 0 being unlimited; and the
bound a store compares its count with, under which the decision holds."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.billing import BillingState, GatedOperation, is_allowed
from strongroom.domain.errors import BillingRestrictedError, QuotaExceededError
from strongroom.domain.quotas import DEFAULT_LIMITS, QuotaResource
from strongroom.domain.workspaces import Admission, Workspace, admits, usage_bound

ADMIT = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.BACKUPS_PER_WORKSPACE)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def workspace(state: BillingState = BillingState.ACTIVE, limit: int | None = None) -> Workspace:
    overrides = {} if limit is None else {QuotaResource.BACKUPS_PER_WORKSPACE: limit}
    return Workspace(uuid4(), "W", "org", "cus", "ns", uuid4(), state, NOW, NOW, overrides)


def test_billing_is_refused_before_the_quota() -> None:
    """A blocked workspace at its limit: ``billing_restricted``, not ``quota_exceeded``."""
    with pytest.raises(BillingRestrictedError):
        workspace(BillingState.BLOCKED, limit=1).admit(ADMIT, 1)


def test_the_default_limit_holds_without_an_override() -> None:
    """One under the default admits; at it, ``quota_exceeded``."""
    default = DEFAULT_LIMITS[QuotaResource.BACKUPS_PER_WORKSPACE]
    workspace().admit(ADMIT, default - 1)
    with pytest.raises(QuotaExceededError):
        workspace().admit(ADMIT, default)


def test_a_limit_of_zero_is_unlimited() -> None:
    """An override of 0 admits past the default limit, and bounds nothing."""
    unlimited = workspace(limit=0)
    unlimited.admit(ADMIT, DEFAULT_LIMITS[QuotaResource.BACKUPS_PER_WORKSPACE] + 1)
    assert usage_bound(unlimited, ADMIT) is None


@given(
    state=st.sampled_from(list(BillingState)),
    limit=st.none() | st.integers(min_value=0, max_value=5),
    usage=st.integers(min_value=0, max_value=200),
)
def test_the_bound_is_where_the_decision_changes(
    state: BillingState, limit: int | None, usage: int
) -> None:
    """Where billing admits, ``admit`` passes exactly below the bound (any usage when there
    is none): a count the store finds below it admits as the count read did."""
    target = workspace(state, limit)
    bound = usage_bound(target, ADMIT)
    expected = is_allowed(state, ADMIT.operation) and (bound is None or usage < bound)
    assert admits(target, ADMIT, usage) is expected
    try:
        target.admit(ADMIT, usage)
    except (BillingRestrictedError, QuotaExceededError):
        assert not expected
    else:
        assert expected
