"""Fixtures of the HTTP tests of the backups endpoints (``test_backups_*.py``): Ada's and
Bob's workspaces, and Ada's in a service whose clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from support.backups_http import FixedClock, Tenant, tenant_of
from support.world import Api, make_client, make_facade


@pytest.fixture
def ada(api: Api) -> Tenant:
    """Ada administers the workspace Acme."""
    return tenant_of(api, "ada@example.com")


@pytest.fixture
def bob(api: Api) -> Tenant:
    """Bob administers another workspace, Globex."""
    return tenant_of(api, "bob@example.com", "Globex")


@pytest.fixture
def clock() -> FixedClock:
    """Wednesday 2030-01-02 12:00 UTC (Paris is UTC+1 in January)."""
    return FixedClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))


@pytest.fixture
def timed(clock: FixedClock) -> Iterator[Tenant]:
    """Ada's workspace in a service whose clock the test controls."""
    facade = make_facade(clock=clock)
    with make_client(facade) as client:
        yield tenant_of(Api(facade, client), "ada@example.com")
